//! `job_events`: the history of each job.

use chrono::{DateTime, Utc};
use patchperf_common::protocol::JobState;
use sqlx::{PgConnection, PgExecutor};

/// One event of a job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EventRow {
    /// When.
    pub at: DateTime<Utc>,
    /// The job's state after the event.
    pub state: JobState,
    /// The attempt it happened in.
    pub attempt: i32,
    /// The machine involved, if any.
    pub machine_id: Option<i64>,
    /// What happened.
    pub message: String,
    /// The end of the log at that moment.
    pub log_tail: String,
}

/// Records an event.
pub async fn insert(
    conn: &mut PgConnection,
    job_id: i64,
    state: JobState,
    attempt: i32,
    machine_id: Option<i64>,
    message: &str,
    log_tail: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO job_events (job_id, state, attempt, machine_id, message, log_tail)
         VALUES ($1, $2, $3, $4, $5, $6)",
        job_id,
        state.as_str(),
        attempt,
        machine_id,
        message,
        log_tail
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A job's events, oldest first.
pub async fn for_job(db: impl PgExecutor<'_>, job_id: i64) -> Result<Vec<EventRow>, sqlx::Error> {
    sqlx::query_as!(
        EventRow,
        r#"SELECT at, state AS "state: JobState", attempt, machine_id, message, log_tail
           FROM job_events WHERE job_id = $1 ORDER BY id"#,
        job_id
    )
    .fetch_all(db)
    .await
}

/// One thing the runner said while building a comparison's kernels.
#[derive(Debug, Clone)]
pub struct BuildingMessage {
    /// The comparison of the job.
    pub comparison_id: i64,
    /// The event's message (`building the patched kernel (3 patches, 3
    /// files)`, `base kernel found in the cache`).
    pub message: String,
}

/// Every distinct message of the `building` events of these comparisons'
/// jobs.
pub async fn building_messages(
    db: impl PgExecutor<'_>,
    comparison_ids: &[i64],
) -> Result<Vec<BuildingMessage>, sqlx::Error> {
    sqlx::query_as!(
        BuildingMessage,
        r#"SELECT DISTINCT j.comparison_id, e.message
           FROM job_events e JOIN jobs j ON j.id = e.job_id
           WHERE j.comparison_id = ANY($1) AND e.state = 'building'"#,
        comparison_ids
    )
    .fetch_all(db)
    .await
}
