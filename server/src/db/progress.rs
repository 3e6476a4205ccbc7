//! How far comparisons have come, read from the jobs, boots and runs
//! tables by counting alone: what the dashboard shows of a running
//! comparison, and what tells a kept report (see
//! `domain::report::cache`) whether new runs arrived since it was built.

use sqlx::PgExecutor;

/// A comparison's boots and runs so far, and what its runner is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Comparison id.
    pub id: i64,
    /// Boots planned (both sides, boots added while undecided included).
    pub boots: i64,
    /// Boots that uploaded at least one run.
    pub booted: i64,
    /// Runs stored.
    pub runs: i64,
    /// The state of the first job a runner holds now (`building`,
    /// `running`, …), if one does.
    pub active: Option<String>,
}

/// The progress of each of these comparisons, in no particular order. A
/// comparison that borrows its runs from its steps (see `db::runs`)
/// counts its family's boots: it is answered when they are.
pub async fn of_comparisons(
    db: impl PgExecutor<'_>,
    ids: &[i64],
) -> Result<Vec<Progress>, sqlx::Error> {
    sqlx::query_as!(
        Progress,
        r#"WITH measured AS (
               SELECT c.id, c.id AS by FROM unnest($1::bigint[]) AS c(id)
               UNION ALL
               SELECT s.parent_id, s.id FROM comparisons s
               WHERE s.parent_id = ANY ($1)
                 AND EXISTS (SELECT 1 FROM borrowed_runs b WHERE b.comparison_id = s.parent_id))
           SELECT c.id AS "id!",
                  (SELECT count(*) FROM boots b JOIN measured m ON m.by = b.comparison_id
                   WHERE m.id = c.id) AS "boots!",
                  (SELECT count(DISTINCT (r.comparison_id, r.boot_seq)) FROM runs r
                   JOIN measured m ON m.by = r.comparison_id WHERE m.id = c.id) AS "booted!",
                  (SELECT count(*) FROM runs r JOIN measured m ON m.by = r.comparison_id
                   WHERE m.id = c.id) AS "runs!",
                  (SELECT j.state FROM jobs j JOIN measured m ON m.by = j.comparison_id
                   WHERE m.id = c.id AND j.state NOT IN ('queued', 'done', 'failed')
                   ORDER BY j.seq LIMIT 1) AS active
           FROM unnest($1::bigint[]) AS c(id)"#,
        ids
    )
    .fetch_all(db)
    .await
}

/// What of a comparison's runs decides whether its report changed: how
/// many there are and the newest (runs are only ever added).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunsSoFar {
    /// Runs stored.
    pub runs: i64,
    /// Id of the newest.
    pub last_run: Option<i64>,
}

/// The runs so far of comparison `id`, borrowed ones included.
pub async fn runs_so_far(db: impl PgExecutor<'_>, id: i64) -> Result<RunsSoFar, sqlx::Error> {
    sqlx::query_as!(
        RunsSoFar,
        r#"SELECT count(*) AS "runs!", max(run_id) AS last_run FROM runs_of($1)"#,
        id
    )
    .fetch_one(db)
    .await
}
