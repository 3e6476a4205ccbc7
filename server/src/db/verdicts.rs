//! Stored overall verdicts of finished comparisons (the `verdict` columns
//! of `comparisons` and the `current_verdicts` view of the valid ones), so
//! that listings filter and sort by verdict without building reports.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::OverallVerdict;
use sqlx::PgExecutor;

/// What a stored verdict was computed from; it stays valid while both are
/// unchanged.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint {
    /// The comparison's `updated_at` when its report was built.
    pub updated_at: DateTime<Utc>,
    /// The machine's latest finished A/A comparison then (the noise floor).
    pub latest_aa: Option<i64>,
}

/// Finished comparisons whose stored verdict is missing or out of date,
/// newest first.
pub async fn stale(db: impl PgExecutor<'_>, limit: i64) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT c.id FROM comparisons c
         WHERE c.status IN ('done', 'failed', 'cancelled')
           AND NOT EXISTS (SELECT 1 FROM current_verdicts v WHERE v.id = c.id)
         ORDER BY c.id DESC
         LIMIT $1",
        limit
    )
    .fetch_all(db)
    .await
}

/// The fingerprint the comparison's verdict would be computed from now.
/// Read it before building the report: a change after the read then only
/// makes the stored verdict stale, never wrongly current.
pub async fn fingerprint(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<Fingerprint>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT c.updated_at,
                  CASE WHEN c.kind = 'ab' THEN
                      (SELECT max(a.id) FROM comparisons a
                       WHERE a.machine_id = c.machine_id AND a.kind = 'aa' AND a.status = 'done')
                  END AS latest_aa
           FROM comparisons c WHERE c.id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| Fingerprint {
        updated_at: r.updated_at,
        latest_aa: r.latest_aa,
    }))
}

/// Stores a comparison's overall verdict and dashboard headline.
pub async fn store(
    db: impl PgExecutor<'_>,
    id: i64,
    verdict: OverallVerdict,
    headline: &str,
    from: Fingerprint,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET verdict = $2, headline = $3, verdict_for = $4, verdict_aa = $5
         WHERE id = $1",
        id,
        verdict.as_str(),
        headline,
        from.updated_at,
        from.latest_aa
    )
    .execute(db)
    .await?;
    Ok(())
}
