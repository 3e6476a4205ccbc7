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

/// The progress of each of these comparisons, in no particular order.
pub async fn of_comparisons(
    db: impl PgExecutor<'_>,
    ids: &[i64],
) -> Result<Vec<Progress>, sqlx::Error> {
    sqlx::query_as!(
        Progress,
        r#"SELECT c.id AS "id!",
                  (SELECT count(*) FROM boots b WHERE b.comparison_id = c.id) AS "boots!",
                  (SELECT count(DISTINCT r.boot_seq) FROM runs r
                   WHERE r.comparison_id = c.id) AS "booted!",
                  (SELECT count(*) FROM runs r WHERE r.comparison_id = c.id) AS "runs!",
                  (SELECT j.state FROM jobs j
                   WHERE j.comparison_id = c.id AND j.state NOT IN ('queued', 'done', 'failed')
                   ORDER BY j.seq LIMIT 1) AS active
           FROM unnest($1::bigint[]) AS c(id)"#,
        ids
    )
    .fetch_all(db)
    .await
}

/// What of a comparison's runs decides whether its report changed: how
/// many there are, the newest (runs are only ever added), and the A/A
/// comparison whose noise floor it is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsSoFar {
    /// Runs stored.
    pub runs: i64,
    /// Id of the newest.
    pub last_run: Option<i64>,
    /// The machine's latest finished A/A comparison, for an A/B one.
    pub latest_aa: Option<i64>,
}

/// The runs so far of comparison `id` (zero runs for an unknown id).
pub async fn runs_so_far(db: impl PgExecutor<'_>, id: i64) -> Result<RunsSoFar, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM runs r WHERE r.comparison_id = c.id) AS "runs!",
                  (SELECT max(r.id) FROM runs r WHERE r.comparison_id = c.id) AS last_run,
                  CASE WHEN c.kind = 'ab' THEN
                      (SELECT max(a.id) FROM comparisons a
                       WHERE a.machine_id = c.machine_id AND a.kind = 'aa' AND a.status = 'done')
                  END AS latest_aa
           FROM comparisons c WHERE c.id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map_or(
        RunsSoFar {
            runs: 0,
            last_run: None,
            latest_aa: None,
        },
        |r| RunsSoFar {
            runs: r.runs,
            last_run: r.last_run,
            latest_aa: r.latest_aa,
        },
    ))
}
