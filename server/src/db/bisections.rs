//! `bisections`: what was asked to bisect, where it stands and its answer.
//! The probes are comparisons (`comparisons.bisection_id`, see
//! [`super::comparisons::probes`]).

use chrono::{DateTime, Utc};
use patchperf_common::api::{BisectionOutcome, BisectionStatus, Setup};
use patchperf_common::protocol::{BaseSource, WorkloadParams};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// A new bisection, checked.
#[derive(Debug, Clone)]
pub struct NewBisection<'a> {
    /// The good end.
    pub base: &'a BaseSource,
    /// The series bisected (commit k = patches 1..k).
    pub series_id: i64,
    /// For a git range: each patch's commit, in order.
    pub commits: &'a [String],
    /// For a git range: `GOOD..BAD`, full ids.
    pub git_range: Option<&'a str>,
    /// The metric followed.
    pub metric: &'a str,
    /// How every probe is measured: the workload followed, one mode and
    /// nr_task, its run length, runs and most runs fixed.
    pub setup: &'a Setup,
    /// The machine named at submission.
    pub machine_id: Option<i64>,
    /// The comparison it starts from.
    pub from_comparison_id: Option<i64>,
    /// Seed of the probes' boot orders.
    pub order_seed: i64,
    /// Token that submitted it.
    pub submitted_by: i64,
}

/// Stores a new bisection, running; returns its id.
pub async fn insert(conn: &mut PgConnection, new: &NewBisection<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"INSERT INTO bisections (base, series_id, commits, git_range, setup, metric, params,
                                   runs_per_side, machine_id, from_comparison_id, order_seed,
                                   submitted_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           RETURNING id"#,
        Json(new.base) as _,
        new.series_id,
        new.commits,
        new.git_range,
        super::setup::stored(new.setup) as _,
        new.metric,
        Json(new.setup.params.resolve(None)) as _,
        i32::try_from(new.setup.runs).unwrap_or(i32::MAX),
        new.machine_id,
        new.from_comparison_id,
        new.order_seed,
        new.submitted_by
    )
    .fetch_one(conn)
    .await
}

/// A stored bisection.
#[derive(Debug, Clone)]
pub struct BisectionRow {
    /// Row id.
    pub id: i64,
    /// Where it stands.
    pub status: BisectionStatus,
    /// The good end.
    pub base: Json<BaseSource>,
    /// The series bisected.
    pub series_id: i64,
    /// For a git range: each patch's commit.
    pub commits: Vec<String>,
    /// For a git range: `GOOD..BAD`.
    pub git_range: Option<String>,
    /// The workload followed.
    pub workload: String,
    /// The metric followed.
    pub metric: String,
    /// Every probe's parameters.
    pub params: Json<WorkloadParams>,
    /// Boots per side of a probe.
    pub runs_per_side: i32,
    /// How every probe is measured, as fixed at submission;
    /// [`BisectionRow::setup`] is as in effect.
    pub asked: Json<Setup>,
    /// The machine named at submission.
    pub machine_id: Option<i64>,
    /// The comparison it started from.
    pub from_comparison_id: Option<i64>,
    /// Seed of the probes' boot orders.
    pub order_seed: i64,
    /// The answer, once there is one.
    pub outcome: Option<Json<BisectionOutcome>>,
    /// The submitting token.
    pub submitted_by: i64,
    /// Its name.
    pub submitted_by_name: String,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
}

impl BisectionRow {
    /// How every probe is measured; the machine is `machine_id`'s (or the
    /// first probe's), which a probe is pinned to by id.
    pub fn setup(&self) -> Setup {
        let setup = super::setup::in_effect(&self.asked, &self.params, self.runs_per_side, None);
        Setup {
            max_runs: Some(setup.max_runs.unwrap_or(setup.runs)),
            ..setup
        }
    }
}

/// The bisection with this id.
pub async fn find(db: impl PgExecutor<'_>, id: i64) -> Result<Option<BisectionRow>, sqlx::Error> {
    sqlx::query_as!(
        BisectionRow,
        r#"SELECT b.id, b.status AS "status: BisectionStatus",
                  b.base AS "base: Json<BaseSource>", b.series_id, b.commits, b.git_range,
                  b.setup -> 'workloads' ->> 0 AS "workload!", b.metric,
                  b.params AS "params: Json<WorkloadParams>", b.runs_per_side,
                  b.setup AS "asked!: Json<Setup>",
                  b.machine_id, b.from_comparison_id, b.order_seed,
                  b.outcome AS "outcome: Json<BisectionOutcome>",
                  b.submitted_by, t.name AS submitted_by_name, b.created_at, b.finished_at
           FROM bisections b JOIN tokens t ON t.id = b.submitted_by
           WHERE b.id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// Locks the bisection's row for the rest of the transaction, so that two
/// servers advancing it at once make one probe, not two; its status.
pub async fn lock(
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<BisectionStatus>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT status AS "status: BisectionStatus" FROM bisections WHERE id = $1 FOR UPDATE"#,
        id
    )
    .fetch_optional(conn)
    .await
}

/// The bisections still running, oldest first.
pub async fn running(db: impl PgExecutor<'_>) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!("SELECT id FROM bisections WHERE status = 'running' ORDER BY id")
        .fetch_all(db)
        .await
}

/// Ends the bisection with `status` and `outcome`.
pub async fn finish(
    conn: &mut PgConnection,
    id: i64,
    status: BisectionStatus,
    outcome: Option<&BisectionOutcome>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE bisections SET status = $2, outcome = $3, updated_at = now(), finished_at = now()
         WHERE id = $1",
        id,
        status.as_str(),
        outcome.map(Json) as _
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A bisection as the dashboard and `GET /api/v1/bisections` list it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BisectionSummary {
    /// Row id.
    pub id: i64,
    /// Where it stands.
    pub status: BisectionStatus,
    /// The workload followed.
    pub workload: String,
    /// The metric followed.
    pub metric: String,
    /// For a git range: `GOOD..BAD`.
    pub git_range: Option<String>,
    /// The comparison it started from.
    pub comparison_id: Option<i64>,
    /// The answer, once there is one.
    pub outcome: Option<Json<BisectionOutcome>>,
    /// Probes made so far.
    pub probes: i64,
    /// Submission time.
    pub created_at: DateTime<Utc>,
}

/// The newest `limit` bisections with an id below `before`, newest first.
pub async fn list(
    db: impl PgExecutor<'_>,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<BisectionSummary>, sqlx::Error> {
    summaries(db, before, None, Some(limit)).await
}

/// The bisections of comparison `id`: those started from it, and those of
/// the same git range `range` (`GOOD..BAD`, full ids); oldest first.
pub async fn of_comparison(
    db: impl PgExecutor<'_>,
    id: i64,
    range: Option<&str>,
) -> Result<Vec<BisectionSummary>, sqlx::Error> {
    let mut found = summaries(db, None, Some((id, range)), None).await?;
    found.reverse();
    Ok(found)
}

/// Bisections newest first: with an id below `before`, of comparison
/// `of.0` or its git range `of.1` (see [`of_comparison`]), at most `limit`;
/// each filter left out when `None`. The dashboard, the API's list and a
/// comparison's page read one summary this way.
async fn summaries(
    db: impl PgExecutor<'_>,
    before: Option<i64>,
    of: Option<(i64, Option<&str>)>,
    limit: Option<i64>,
) -> Result<Vec<BisectionSummary>, sqlx::Error> {
    let (comparison_id, range) = of.unzip();
    sqlx::query_as!(
        BisectionSummary,
        r#"SELECT b.id, b.status AS "status: BisectionStatus",
                  b.setup -> 'workloads' ->> 0 AS "workload!", b.metric, b.git_range,
                  b.from_comparison_id AS comparison_id,
                  b.outcome AS "outcome: Json<BisectionOutcome>",
                  (SELECT count(*) FROM comparisons c WHERE c.bisection_id = b.id) AS "probes!",
                  b.created_at
           FROM bisections b
           WHERE ($1::bigint IS NULL OR b.id < $1)
             AND ($2::bigint IS NULL OR b.from_comparison_id = $2
                  OR ($3::text IS NOT NULL AND b.git_range = $3))
           ORDER BY b.id DESC
           LIMIT $4"#,
        before,
        comparison_id,
        range.flatten(),
        limit
    )
    .fetch_all(db)
    .await
}
