//! `comparison_reports`, the built report of each comparison with what it
//! was built from, and `stale_reports`, the comparisons whose report the
//! background builder is to build again.

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
/// replacing the one before unless the comparison was pruned since (that
/// one stands for data no longer here: `db::retention`).
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
             built_at = now()
         WHERE NOT EXISTS (SELECT 1 FROM comparisons c
                           WHERE c.id = comparison_reports.comparison_id
                             AND c.pruned_at IS NOT NULL)",
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
/// removing their mark: a change after this marks them again, so nothing
/// is missed, and servers sharing the database never take the same one. A
/// comparison still running whose report was built less than
/// `running_every_seconds` ago stays marked for a later pass, so runs
/// arriving one after another cost one build per interval, not one each.
pub async fn take_stale(
    conn: &mut PgConnection,
    limit: i64,
    running_every_seconds: f64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "DELETE FROM stale_reports
         WHERE comparison_id IN (
             SELECT s.comparison_id FROM stale_reports s
             JOIN comparisons c ON c.id = s.comparison_id
             WHERE s.due_at <= now()
               AND (c.status IN ('done', 'failed', 'cancelled')
                    OR NOT EXISTS (SELECT 1 FROM comparison_reports r
                                   WHERE r.comparison_id = s.comparison_id
                                     AND r.built_at > now() - make_interval(secs => $2)))
             ORDER BY s.comparison_id DESC LIMIT $1
             FOR UPDATE OF s SKIP LOCKED)
         RETURNING comparison_id",
        limit,
        running_every_seconds
    )
    .fetch_all(conn)
    .await
}

/// How many comparisons wait for the builder (a failed build waiting to be
/// tried again included).
pub async fn stale_count(db: impl PgExecutor<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM stale_reports"#)
        .fetch_one(db)
        .await
}

/// Marks comparison `id`'s report stale, to be built now (also when a
/// retry was due later: the change may be what it waited for).
pub async fn mark_stale(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO stale_reports (comparison_id) VALUES ($1)
         ON CONFLICT (comparison_id) DO UPDATE SET due_at = LEAST(stale_reports.due_at, now())",
        id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks comparison `id`'s report to be built again in `seconds` (its
/// build failed), unless it is marked already.
pub async fn retry_later(
    db: impl PgExecutor<'_>,
    id: i64,
    seconds: f64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO stale_reports (comparison_id, due_at)
         VALUES ($1, now() + make_interval(secs => $2))
         ON CONFLICT DO NOTHING",
        id,
        seconds
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Marks stale the report of every A/B comparison of the machine whose
/// A/A comparison `aa_id` just finished (their noise floor changed); does
/// nothing when `aa_id` is not a finished A/A comparison. Returns how many
/// it marked.
pub async fn mark_floor_changed(conn: &mut PgConnection, aa_id: i64) -> Result<u64, sqlx::Error> {
    let marked = sqlx::query!(
        "INSERT INTO stale_reports (comparison_id)
         SELECT c.id FROM comparisons c JOIN comparisons aa ON aa.machine_id = c.machine_id
         WHERE aa.id = $1 AND aa.kind = 'aa' AND aa.status = 'done' AND c.kind = 'ab'
         ON CONFLICT DO NOTHING",
        aa_id
    )
    .execute(conn)
    .await?;
    Ok(marked.rows_affected())
}
