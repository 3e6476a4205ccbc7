//! The reads a comparison report needs besides its metric values
//! (`runs::report_values`, the one indexed query over `metric_values`): the
//! runs' identities, their unsupported metrics, their per-second series, and
//! the jobs a machine page lists.

use chrono::{DateTime, Utc};
use patchperf_common::protocol::{FailureReason, JobState};
use patchperf_common::run::{KernelIdentity, Side};
use sqlx::PgExecutor;
use sqlx::types::Json;

/// A stored run without its values.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// Run id.
    pub id: i64,
    /// Job that uploaded it.
    pub job_id: i64,
    /// Comparison-wide boot position.
    pub boot_seq: i32,
    /// Which kernel it ran on.
    pub side: Side,
    /// Workload.
    pub workload: String,
    /// Task count.
    pub nr_task: i32,
    /// `process` or `thread`.
    pub mode: String,
    /// Measurement mode spelling.
    pub measurement: String,
    /// The kernel the run happened on.
    pub kernel: Option<Json<KernelIdentity>>,
    /// Event perf sampled, if the run was profiled.
    pub profile_event: Option<String>,
    /// Measured seconds.
    pub seconds: Option<i32>,
    /// Warm-up seconds.
    pub warmup_seconds: Option<i32>,
    /// The run's warnings.
    pub warnings: Option<Json<Vec<String>>>,
}

/// Every run of a comparison, in boot order.
pub async fn runs(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<RunMeta>, sqlx::Error> {
    sqlx::query_as!(
        RunMeta,
        r#"SELECT id, job_id, boot_seq, side AS "side: Side", workload, nr_task, mode, measurement,
                  kernel AS "kernel: Json<KernelIdentity>",
                  result->>'profile_event' AS profile_event,
                  (result->>'seconds')::int AS seconds,
                  (result->>'warmup_seconds')::int AS warmup_seconds,
                  result->'warnings' AS "warnings: Json<Vec<String>>"
           FROM runs WHERE comparison_id = $1
           ORDER BY boot_seq, workload, nr_task"#,
        comparison_id
    )
    .fetch_all(db)
    .await
}

/// (run id, metric name) of every unsupported metric of a comparison.
pub async fn unsupported(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<(i64, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT run_id, name FROM unsupported_metrics WHERE comparison_id = $1",
        comparison_id
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.run_id, r.name)).collect())
}

/// One per-second series of one run.
#[derive(Debug, Clone)]
pub struct SeriesRow {
    /// Run id.
    pub run_id: i64,
    /// Metric name.
    pub name: String,
    /// Seconds between points.
    pub interval_seconds: f64,
    /// The points.
    pub points: Vec<f64>,
}

/// The series called `name` of every run of a comparison.
pub async fn series(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
    name: &str,
) -> Result<Vec<SeriesRow>, sqlx::Error> {
    sqlx::query_as!(
        SeriesRow,
        "SELECT s.run_id, s.name, s.interval_seconds, s.points
         FROM run_series s JOIN runs r ON r.id = s.run_id
         WHERE r.comparison_id = $1 AND s.name = $2
         ORDER BY r.boot_seq",
        comparison_id,
        name
    )
    .fetch_all(db)
    .await
}

/// A job as a machine page lists it.
#[derive(Debug, Clone)]
pub struct MachineJob {
    /// Job id.
    pub id: i64,
    /// Its comparison.
    pub comparison_id: i64,
    /// Current state.
    pub state: JobState,
    /// Last progress message.
    pub message: String,
    /// Why it failed, if it did.
    pub failure_reason: Option<FailureReason>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// The latest jobs a machine held.
pub async fn jobs_of_machine(
    db: impl PgExecutor<'_>,
    machine_id: i64,
    limit: i64,
) -> Result<Vec<MachineJob>, sqlx::Error> {
    sqlx::query_as!(
        MachineJob,
        r#"SELECT id, comparison_id, state AS "state: JobState", message,
                  failure_reason AS "failure_reason: FailureReason", updated_at
           FROM jobs WHERE machine_id = $1 ORDER BY updated_at DESC, id DESC LIMIT $2"#,
        machine_id,
        limit
    )
    .fetch_all(db)
    .await
}

/// sha256 of a stored patch series (without loading the mbox).
pub async fn series_sha256(db: impl PgExecutor<'_>, series_id: i64) -> Result<String, sqlx::Error> {
    sqlx::query_scalar!("SELECT sha256 FROM patch_series WHERE id = $1", series_id)
        .fetch_one(db)
        .await
}

/// A job by id, read without locking (for its log page).
pub async fn job(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<crate::db::jobs::JobRow>, sqlx::Error> {
    sqlx::query_as!(
        crate::db::jobs::JobRow,
        r#"SELECT id, comparison_id, seq, state AS "state: JobState", attempt, max_attempts,
                  machine_id, lease_expires_at, message,
                  failure_reason AS "failure_reason: FailureReason", failure_detail, log_tail,
                  created_at, updated_at, finished_at
           FROM jobs WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}
