//! `comparison_reports`, the built report of each comparison with what it
//! was built from, and the `report_stale` flag of `comparisons` that tells
//! the background builder which ones to build again.

use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// A stored report: what it was built from, and the report in CBOR.
#[derive(Debug, Clone)]
pub struct StoredReport {
    /// The inputs it was built from, as the domain layer wrote them.
    pub inputs: serde_json::Value,
    /// The encoded report.
    pub body: Vec<u8>,
}

/// The stored report of comparison `id`, if one was built.
pub async fn find(db: impl PgExecutor<'_>, id: i64) -> Result<Option<StoredReport>, sqlx::Error> {
    sqlx::query_as!(
        StoredReport,
        "SELECT inputs, body FROM comparison_reports WHERE comparison_id = $1",
        id
    )
    .fetch_optional(db)
    .await
}

/// Stores comparison `id`'s report built from `inputs` in `build_ms`,
/// replacing the one before.
pub async fn store(
    db: impl PgExecutor<'_>,
    id: i64,
    inputs: &serde_json::Value,
    body: &[u8],
    build_ms: i32,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO comparison_reports (comparison_id, inputs, body, build_ms)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (comparison_id) DO UPDATE
         SET inputs = EXCLUDED.inputs, body = EXCLUDED.body, build_ms = EXCLUDED.build_ms,
             built_at = now()",
        id,
        Json(inputs) as _,
        body,
        build_ms.max(0)
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Takes up to `limit` comparisons whose report is stale, newest first,
/// clearing their flag: a change after this sets it again, so nothing is
/// missed, and servers sharing the database never take the same one. A
/// comparison still running whose report was built less than
/// `running_every_seconds` ago waits (flagged) for a later pass, so runs
/// arriving one after another cost one build per interval, not one each.
pub async fn take_stale(
    conn: &mut PgConnection,
    limit: i64,
    running_every_seconds: f64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "UPDATE comparisons SET report_stale = false
         WHERE id IN (
             SELECT c.id FROM comparisons c
             WHERE c.report_stale
               AND (c.status IN ('done', 'failed', 'cancelled')
                    OR NOT EXISTS (SELECT 1 FROM comparison_reports r
                                   WHERE r.comparison_id = c.id
                                     AND r.built_at > now() - make_interval(secs => $2)))
             ORDER BY c.id DESC LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id",
        limit,
        running_every_seconds
    )
    .fetch_all(conn)
    .await
}

/// Flags comparison `id`'s report stale (a run was stored).
pub async fn mark_stale(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET report_stale = true WHERE id = $1 AND NOT report_stale",
        id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Flags stale the report of every A/B comparison of the machine whose
/// A/A comparison `aa_id` just finished (their noise floor changed); does
/// nothing when `aa_id` is not a finished A/A comparison. Returns how many
/// it flagged.
pub async fn mark_floor_changed(conn: &mut PgConnection, aa_id: i64) -> Result<u64, sqlx::Error> {
    let flagged = sqlx::query!(
        "UPDATE comparisons c SET report_stale = true
         FROM comparisons aa
         WHERE aa.id = $1 AND aa.kind = 'aa' AND aa.status = 'done'
           AND c.machine_id = aa.machine_id AND c.kind = 'ab' AND NOT c.report_stale",
        aa_id
    )
    .execute(conn)
    .await?;
    Ok(flagged.rows_affected())
}
