//! `jobs`: the queue, leases and outcomes of the units runners claim.

use chrono::{DateTime, Utc};
use patchperf_common::protocol::{FailureReason, JobState};
use sqlx::{PgConnection, PgExecutor};

/// A job as stored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JobRow {
    /// Row id.
    pub id: i64,
    /// Its comparison.
    pub comparison_id: i64,
    /// Claim order within the comparison.
    pub seq: i32,
    /// Where it stands.
    pub state: JobState,
    /// Claims so far.
    pub attempt: i32,
    /// Claims allowed.
    pub max_attempts: i32,
    /// Lease holder (or the machine that ran it, once final).
    pub machine_id: Option<i64>,
    /// When the lease runs out.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// Last progress message.
    pub message: String,
    /// Why it failed, when it did.
    pub failure_reason: Option<FailureReason>,
    /// Specifics of the failure.
    pub failure_detail: Option<String>,
    /// Last log tail reported.
    pub log_tail: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// When it became done or failed.
    pub finished_at: Option<DateTime<Utc>>,
    /// The workloads its boots run, when not all of its comparison's (a
    /// boot added while some were undecided).
    pub workloads: Option<Vec<String>>,
}

/// Creates a queued job running `workloads` (all of its comparison's when
/// `None`); returns its id.
pub async fn insert(
    conn: &mut PgConnection,
    comparison_id: i64,
    seq: i32,
    max_attempts: i32,
    workloads: Option<&[String]>,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO jobs (comparison_id, seq, max_attempts, workloads)
         VALUES ($1, $2, $3, $4) RETURNING id",
        comparison_id,
        seq,
        max_attempts,
        workloads as Option<&[String]>
    )
    .fetch_one(conn)
    .await
}

/// The jobs of a comparison in claim order.
pub async fn for_comparison(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<JobRow>, sqlx::Error> {
    rows(db, None, Some(comparison_id)).await
}

/// Locks and returns a job for the rest of the transaction.
pub async fn lock(conn: &mut PgConnection, id: i64) -> Result<Option<JobRow>, sqlx::Error> {
    let locked = sqlx::query_scalar!("SELECT id FROM jobs WHERE id = $1 FOR UPDATE", id)
        .fetch_optional(&mut *conn)
        .await?;
    match locked {
        Some(id) => by_id(conn, id).await,
        None => Ok(None),
    }
}

/// Job `id`, or the jobs of comparison `comparison_id`, in claim order.
async fn rows(
    db: impl PgExecutor<'_>,
    id: Option<i64>,
    comparison_id: Option<i64>,
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRow,
        r#"SELECT id, comparison_id, seq, state AS "state: JobState", attempt, max_attempts,
                  machine_id, lease_expires_at, message,
                  failure_reason AS "failure_reason: FailureReason", failure_detail, log_tail,
                  created_at, updated_at, finished_at, workloads
           FROM jobs WHERE id = $1 OR comparison_id = $2 ORDER BY seq"#,
        id,
        comparison_id
    )
    .fetch_all(db)
    .await
}

/// The next job `machine_id` may take, locked together with its comparison
/// (so no other machine pins that comparison meanwhile); rows other
/// transactions hold are skipped, never waited for. A job is claimable when
/// its comparison is live and not pinned elsewhere, its backend (if asked
/// for) is one the machine offers, and every earlier job of the comparison
/// is final, so boots happen in the recorded order; in a per-patch
/// comparison so is every job of the steps before it (the parent counts as
/// coming after its last step). A first calibration of the machine
/// first, its recalibrations last, else oldest comparison first; and a
/// comparison waits for its first calibration to end (a machine holding
/// several jobs would otherwise run it beside its A/A, judged without it).
pub async fn next_claimable(
    conn: &mut PgConnection,
    machine_id: i64,
    backends: &[String],
    labels: &[String],
) -> Result<Option<Claimable>, sqlx::Error> {
    sqlx::query_as!(
        Claimable,
        r#"SELECT j.id, j.comparison_id FROM jobs j
           JOIN comparisons c ON c.id = j.comparison_id
           WHERE j.state = 'queued'
             AND c.status IN ('queued', 'running')
             AND (c.machine_id IS NULL OR c.machine_id = $1)
             AND (c.setup ->> 'backend' IS NULL OR c.setup ->> 'backend' = ANY ($2))
             AND (c.setup ->> 'pool' IS NULL OR c.machine_id = $1
                  OR c.setup ->> 'pool' = ANY ($3))
             AND NOT EXISTS (SELECT 1 FROM jobs p
                             WHERE p.comparison_id = j.comparison_id AND p.seq < j.seq
                               AND p.state NOT IN ('done', 'failed'))
           AND NOT EXISTS (SELECT 1 FROM comparisons s
                             JOIN jobs p ON p.comparison_id = s.id
                             WHERE s.parent_id = COALESCE(c.parent_id, c.id)
                               AND s.step < COALESCE(c.step, 2147483647)
                               AND p.state NOT IN ('done', 'failed'))
           AND NOT EXISTS (SELECT 1 FROM comparisons a
                             WHERE a.calibrates IN (c.id, c.parent_id) AND a.priority > 0
                               AND a.status IN ('queued', 'running'))
           ORDER BY c.priority DESC, c.id, j.seq
           LIMIT 1
           FOR UPDATE OF j, c SKIP LOCKED"#,
        machine_id,
        backends,
        labels
    )
    .fetch_optional(conn)
    .await
}

/// A job a machine may claim.
#[derive(Debug, Clone, Copy)]
pub struct Claimable {
    /// The job.
    pub id: i64,
    /// Its comparison.
    pub comparison_id: i64,
}

/// Leases a (locked, queued) job to a machine for `lease_seconds`; returns
/// the job with its new attempt number.
pub async fn lease(
    conn: &mut PgConnection,
    id: i64,
    machine_id: i64,
    lease_seconds: f64,
    message: &str,
) -> Result<JobRow, sqlx::Error> {
    sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs
           SET state = 'claimed', attempt = attempt + 1, machine_id = $2,
               lease_expires_at = now() + make_interval(secs => $3), message = $4,
               updated_at = now()
           WHERE id = $1
           RETURNING id, comparison_id, seq, state AS "state: JobState", attempt, max_attempts,
                     machine_id, lease_expires_at, message,
                     failure_reason AS "failure_reason: FailureReason", failure_detail, log_tail,
                     created_at, updated_at, finished_at, workloads"#,
        id,
        machine_id,
        lease_seconds,
        message
    )
    .fetch_one(conn)
    .await
}

/// Extends the lease of a job.
pub async fn extend_lease(
    conn: &mut PgConnection,
    id: i64,
    lease_seconds: f64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $2) WHERE id = $1",
        id,
        lease_seconds
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a progress state.
pub async fn set_state(
    conn: &mut PgConnection,
    id: i64,
    state: JobState,
    message: &str,
    log_tail: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE jobs SET state = $2, message = $3, log_tail = $4, updated_at = now()
         WHERE id = $1",
        id,
        state.as_str(),
        message,
        log_tail
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Finishes a job as done.
pub async fn finish_done(
    conn: &mut PgConnection,
    id: i64,
    log_tail: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE jobs SET state = 'done', message = 'done', log_tail = $2, lease_expires_at = NULL,
                         updated_at = now(), finished_at = now()
         WHERE id = $1",
        id,
        log_tail
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Finishes a job as failed.
pub async fn finish_failed(
    conn: &mut PgConnection,
    id: i64,
    reason: FailureReason,
    detail: &str,
    log_tail: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE jobs SET state = 'failed', message = 'failed', failure_reason = $2,
                         failure_detail = $3, log_tail = $4, lease_expires_at = NULL,
                         updated_at = now(), finished_at = now()
         WHERE id = $1",
        id,
        reason.code(),
        detail,
        log_tail
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Fails every still-queued job of a comparison (after a failure that
/// would repeat in every job, or a cancel); returns their ids and attempts.
pub async fn fail_queued(
    conn: &mut PgConnection,
    comparison_id: i64,
    reason: FailureReason,
    detail: &str,
) -> Result<Vec<(i64, i32)>, sqlx::Error> {
    let rows = sqlx::query!(
        "UPDATE jobs SET state = 'failed', message = 'failed', failure_reason = $2,
                         failure_detail = $3, updated_at = now(), finished_at = now()
         WHERE comparison_id = $1 AND state = 'queued'
         RETURNING id, attempt",
        comparison_id,
        reason.code(),
        detail
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.attempt)).collect())
}

/// A job whose lease ran out, after [`expire_leases`] dealt with it.
#[derive(Debug, Clone)]
pub struct Expired {
    /// Job id.
    pub id: i64,
    /// Its comparison.
    pub comparison_id: i64,
    /// Queued (will be retried) or failed.
    pub state: JobState,
    /// The attempt whose lease ran out.
    pub attempt: i32,
    /// The machine that held it.
    pub machine_id: Option<i64>,
    /// Why it failed, when it did.
    pub failure_reason: Option<FailureReason>,
}

/// Takes back every job whose lease ran out: back to the queue while
/// attempts remain, failed with `lease-expired` after the last one (or
/// `cancelled` when its comparison was cancelled meanwhile). Rows locked by
/// other transactions are left for the next pass.
pub async fn expire_leases(conn: &mut PgConnection) -> Result<Vec<Expired>, sqlx::Error> {
    let leased: Vec<&str> = JobState::LEASED.iter().map(|s| s.as_str()).collect();
    sqlx::query_as!(
        Expired,
        r#"WITH expired AS (
               SELECT j.id, j.machine_id AS holder FROM jobs j
               WHERE j.state = ANY ($1) AND j.lease_expires_at < now()
               FOR UPDATE SKIP LOCKED
           )
           UPDATE jobs j SET
               state = CASE WHEN c.status = 'cancelled' OR j.attempt >= j.max_attempts
                            THEN 'failed' ELSE 'queued' END,
               failure_reason = CASE WHEN c.status = 'cancelled' THEN 'cancelled'
                                     WHEN j.attempt >= j.max_attempts THEN 'lease-expired' END,
               failure_detail = CASE WHEN c.status = 'cancelled' THEN 'comparison cancelled'
                                     WHEN j.attempt >= j.max_attempts
                                     THEN format('the lease ran out in all %s attempts',
                                                 j.max_attempts) END,
               message = CASE WHEN c.status <> 'cancelled' AND j.attempt < j.max_attempts
                              THEN format('lease of attempt %s ran out; queued again', j.attempt)
                              ELSE 'failed' END,
               machine_id = CASE WHEN c.status <> 'cancelled' AND j.attempt < j.max_attempts
                                 THEN NULL ELSE j.machine_id END,
               lease_expires_at = NULL,
               updated_at = now(),
               finished_at = CASE WHEN c.status = 'cancelled' OR j.attempt >= j.max_attempts
                                  THEN now() END
           FROM expired, comparisons c
           WHERE j.id = expired.id AND c.id = j.comparison_id
           RETURNING j.id, j.comparison_id, j.state AS "state: JobState", j.attempt,
                     expired.holder AS machine_id,
                     j.failure_reason AS "failure_reason: FailureReason""#,
        &leased as &[&str]
    )
    .fetch_all(conn)
    .await
}

/// A job by id, read without locking (for its log page).
pub async fn by_id(db: impl PgExecutor<'_>, id: i64) -> Result<Option<JobRow>, sqlx::Error> {
    Ok(rows(db, Some(id), None).await?.pop())
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
pub async fn of_machine(
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

/// The first failed job's words on why it failed (a patch that does not
/// apply, a build error, a panic), for a comparison that failed.
pub async fn first_failure(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT failure_detail AS "detail!" FROM jobs
           WHERE comparison_id = $1 AND failure_reason IS NOT NULL AND failure_detail IS NOT NULL
           ORDER BY id LIMIT 1"#,
        comparison_id
    )
    .fetch_optional(db)
    .await
}

/// Seconds a boot took lately on machine `machine_id`: the median over its
/// last ten finished jobs of (finish − first `booting` event of the
/// attempt that finished) ÷ the job's boots. Builds are not in it (they
/// come before the first boot).
pub async fn seconds_per_boot(
    db: impl PgExecutor<'_>,
    machine_id: i64,
) -> Result<Option<f64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY per_boot) AS "median"
           FROM (SELECT EXTRACT(EPOCH FROM (j.finished_at - min(e.at)))::float8
                        / (SELECT count(*) FROM boots b WHERE b.job_id = j.id) AS per_boot
                 FROM jobs j
                 JOIN job_events e ON e.job_id = j.id AND e.state = 'booting'
                                  AND e.attempt = j.attempt
                 WHERE j.machine_id = $1 AND j.state = 'done' AND j.finished_at IS NOT NULL
                 GROUP BY j.id
                 ORDER BY j.finished_at DESC
                 LIMIT 10) recent
           WHERE per_boot > 0"#,
        machine_id
    )
    .fetch_one(db)
    .await
}

/// How many failed jobs failed for each reason (reasons with none are
/// left out), and the age in seconds of the oldest queued job (0: none).
pub async fn failures_and_oldest_queued(
    db: &sqlx::PgPool,
) -> Result<(Vec<(String, i64)>, f64), sqlx::Error> {
    let failures = sqlx::query!(
        r#"SELECT failure_reason AS "reason!", count(*) AS "n!" FROM jobs
           WHERE state = 'failed' AND failure_reason IS NOT NULL GROUP BY failure_reason"#
    )
    .fetch_all(db)
    .await?;
    let oldest = sqlx::query_scalar!(
        r#"SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at))::float8, 0)
               AS "age!"
           FROM jobs WHERE state = 'queued'"#
    )
    .fetch_one(db)
    .await?;
    Ok((
        failures.into_iter().map(|r| (r.reason, r.n)).collect(),
        oldest,
    ))
}

/// How many jobs are in each state (states with none are left out).
pub async fn count_by_state(db: impl PgExecutor<'_>) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let rows =
        sqlx::query!(r#"SELECT state AS "state!", count(*) AS "n!" FROM jobs GROUP BY state"#)
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(|r| (r.state, r.n)).collect())
}
