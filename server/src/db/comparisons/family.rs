//! A comparison's family in `comparisons`: the steps of a per-patch
//! comparison and the probes of a bisection.

use patchperf_common::comparison::ComparisonStatus;
use sqlx::{PgConnection, PgExecutor};

/// A step of a per-patch comparison as its parent lists it.
#[derive(Debug, Clone)]
pub struct StepRow {
    /// The step's comparison id.
    pub id: i64,
    /// Which patch (1-based).
    pub step: i32,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// Its series (patches 1..step).
    pub series_id: i64,
    /// A git range's step: its commit.
    pub commit_sha: Option<String>,
}

/// The steps of per-patch comparison `parent_id`, in order (none for an
/// ordinary comparison).
pub async fn steps(db: impl PgExecutor<'_>, parent_id: i64) -> Result<Vec<StepRow>, sqlx::Error> {
    sqlx::query_as!(
        StepRow,
        r#"SELECT id, step AS "step!", status AS "status: ComparisonStatus", series_id,
                  commit_sha
           FROM comparisons WHERE parent_id = $1 ORDER BY step"#,
        parent_id
    )
    .fetch_all(db)
    .await
}

/// How many steps the per-patch comparison `parent_id` has.
pub async fn step_count(db: impl PgExecutor<'_>, parent_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM comparisons WHERE parent_id = $1"#,
        parent_id
    )
    .fetch_one(db)
    .await
}

/// The comparisons a failed step `step` of `parent_id` leaves without a
/// series to build: the later steps and the parent, in that order.
pub async fn after_step(
    conn: &mut PgConnection,
    parent_id: i64,
    step: i32,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT id AS "id!" FROM comparisons
           WHERE (parent_id = $1 AND step > $2) OR id = $1
           ORDER BY step NULLS LAST"#,
        parent_id,
        step
    )
    .fetch_all(conn)
    .await
}

/// A bisection's probe as the bisection lists it.
#[derive(Debug, Clone)]
pub struct ProbeRow {
    /// The probe's comparison id.
    pub id: i64,
    /// The commit's position in the series (1-based).
    pub probe: i32,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// The commit, for a git range.
    pub commit_sha: Option<String>,
    /// The machine it ran on, once claimed.
    pub machine_id: Option<i64>,
    /// Boots per side so far.
    pub runs_per_side: i32,
}

/// The probes of bisection `bisection_id`, in the order they were made.
pub async fn probes(
    db: impl PgExecutor<'_>,
    bisection_id: i64,
) -> Result<Vec<ProbeRow>, sqlx::Error> {
    sqlx::query_as!(
        ProbeRow,
        r#"SELECT id, probe AS "probe!", status AS "status: ComparisonStatus", commit_sha,
                  machine_id, runs_per_side
           FROM comparisons WHERE bisection_id = $1 ORDER BY id"#,
        bisection_id
    )
    .fetch_all(db)
    .await
}

/// The bisection comparison `id` is a probe of, and the position of the
/// commit it probes; `None` for any other comparison.
pub async fn probe_of(db: impl PgExecutor<'_>, id: i64) -> Result<Option<(i64, i32)>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT bisection_id AS "bisection_id!", probe AS "probe!"
           FROM comparisons WHERE id = $1 AND bisection_id IS NOT NULL"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.bisection_id, r.probe)))
}

/// Whether comparison `id` has started: a job of it or of its steps was
/// ever claimed.
pub async fn started(db: impl PgExecutor<'_>, id: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT 1 FROM jobs j JOIN comparisons c ON c.id = j.comparison_id
               WHERE (c.id = $1 OR c.parent_id = $1)
                 AND (j.attempt > 0 OR j.state <> 'queued')) AS "x!""#,
        id
    )
    .fetch_one(db)
    .await
}
