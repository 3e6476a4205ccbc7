//! The SQL of pruning bulky data (`domain::retention`): which comparisons
//! may be pruned, and what goes of each: `run_series` rows, the
//! `perf-profile.*` rows of `metric_values` and the per-second samples in
//! `runs.result`. One module for the one policy across those tables.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

/// What was removed of one comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    /// Per-second series (one row per run and metric).
    pub series: u64,
    /// perf-profile values.
    pub profile_values: u64,
    /// Runs whose per-second samples were emptied.
    pub runs_sampled: u64,
}

/// Up to `limit` comparisons that may be pruned, oldest first: finished
/// before `cutoff`, not pruned yet, and with a current stored report (one
/// is stored and no change waits for the builder), which then stands for
/// what is removed.
pub async fn prunable(
    db: impl PgExecutor<'_>,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT c.id FROM comparisons c
         WHERE c.pruned_at IS NULL AND c.finished_at < $1
           AND c.status IN ('done', 'failed', 'cancelled')
           AND EXISTS (SELECT 1 FROM comparison_reports r WHERE r.comparison_id = c.id)
           AND NOT EXISTS (SELECT 1 FROM stale_reports s WHERE s.comparison_id = c.id)
         ORDER BY c.finished_at, c.id
         LIMIT $2",
        cutoff,
        limit
    )
    .fetch_all(db)
    .await
}

/// Marks comparison `id` pruned if it still may be (see [`prunable`]);
/// false when it may not any more (a change came, another server pruned
/// it).
pub async fn mark_pruned(
    conn: &mut PgConnection,
    id: i64,
    cutoff: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let marked = sqlx::query!(
        "UPDATE comparisons c SET pruned_at = now()
         WHERE c.id = $1 AND c.pruned_at IS NULL AND c.finished_at < $2
           AND c.status IN ('done', 'failed', 'cancelled')
           AND EXISTS (SELECT 1 FROM comparison_reports r WHERE r.comparison_id = c.id)
           AND NOT EXISTS (SELECT 1 FROM stale_reports s WHERE s.comparison_id = c.id)",
        id,
        cutoff
    )
    .execute(conn)
    .await?;
    Ok(marked.rows_affected() == 1)
}

/// Removes comparison `id`'s per-second series, perf-profile values and
/// per-second samples.
pub async fn remove_bulk(conn: &mut PgConnection, id: i64) -> Result<Removed, sqlx::Error> {
    let series = sqlx::query!(
        "DELETE FROM run_series s USING runs r WHERE s.run_id = r.id AND r.comparison_id = $1",
        id
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let profile_values = sqlx::query!(
        "DELETE FROM metric_values WHERE comparison_id = $1 AND name LIKE 'perf-profile.%'",
        id
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let runs_sampled = sqlx::query!(
        r#"UPDATE runs SET result = jsonb_set(result, '{samples}', '[]')
           WHERE comparison_id = $1 AND result->'samples' <> '[]'::jsonb"#,
        id
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(Removed {
        series,
        profile_values,
        runs_sampled,
    })
}

/// When comparison `id` was pruned, if it was.
pub async fn pruned_at(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    let at = sqlx::query_scalar!("SELECT pruned_at FROM comparisons WHERE id = $1", id)
        .fetch_optional(db)
        .await?;
    Ok(at.flatten())
}
