//! Every change of a job's state, and so of its comparison's status, in one
//! place: creation, claim, progress, expire, finish (done or failed), cancel
//! and more runs. Each function works inside the caller's transaction, records the
//! job event of what it did and brings the comparison's status in step with
//! its jobs, so a state never changes without its history or its status.
//! Route handlers and the queue call these; nothing else writes a state.
//! Runner log tails are cut here too ([`kept_log_tail`]), so no route can
//! store an unbounded one.

use std::borrow::Cow;

use patchperf_common::naming::NOT_RUN;
use patchperf_common::protocol::{FailureReason, JobState};
use sqlx::PgConnection;

use crate::Error;
use crate::db::{self, jobs::JobRow, machines::MachineRow};
use crate::domain::jobs::interleave::BootPlan;

/// The most of a runner's log tail a job and each of its events keep: the
/// end of a build or boot log says what went wrong, and a runner sending
/// megabytes on every state update must not fill the database.
pub const LOG_TAIL_MAX: usize = 64 * 1024;

/// `log` as stored: whole when it fits in [`LOG_TAIL_MAX`] bytes, else its
/// last `LOG_TAIL_MAX` bytes (from the next character boundary) after a
/// line saying how much was cut.
pub fn kept_log_tail(log: &str) -> Cow<'_, str> {
    if log.len() <= LOG_TAIL_MAX {
        return Cow::Borrowed(log);
    }
    let mut start = log.len() - LOG_TAIL_MAX;
    while !log.is_char_boundary(start) {
        start += 1;
    }
    Cow::Owned(format!(
        "[log cut: first {start} bytes dropped]\n{}",
        &log[start..]
    ))
}

/// Failures that every later job of the comparison would repeat (the same
/// tree, patch, config and runner), so the rest of the comparison is failed
/// at once instead of burning machine time: a timeout, a failed boot or a
/// lost lease may be chance, these are not.
pub fn fails_the_comparison(reason: FailureReason) -> bool {
    matches!(
        reason,
        FailureReason::PatchDoesNotApply
            | FailureReason::FetchFailed
            | FailureReason::BuildFailed
            | FailureReason::KernelPanic
            | FailureReason::Unsupported
            | FailureReason::Cancelled
    )
}

/// Creates the jobs and boots of a comparison's plan from block `first`
/// on (0 for a new comparison; the runs a side so far when more are added);
/// returns the new jobs' ids.
pub async fn create_jobs(
    conn: &mut PgConnection,
    comparison_id: i64,
    plan: &BootPlan,
    first: usize,
    max_attempts: u32,
    workloads: Option<&[String]>,
) -> Result<Vec<i64>, Error> {
    let max_attempts = i32::try_from(max_attempts).unwrap_or(i32::MAX);
    let mut job_ids = Vec::with_capacity(plan.blocks.len().saturating_sub(first));
    for block in first..plan.blocks.len() {
        let seq = i32::try_from(block).unwrap_or(i32::MAX);
        job_ids.push(db::jobs::insert(conn, comparison_id, seq, max_attempts, workloads).await?);
    }
    for (seq, block, side) in plan.boots().filter(|b| b.1 >= first) {
        let seq = i32::try_from(seq).unwrap_or(i32::MAX);
        db::boots::insert(conn, comparison_id, seq, job_ids[block - first], side).await?;
    }
    db::notify_jobs_changed(conn).await?;
    Ok(job_ids)
}

/// Leases a (locked, queued) job to `machine` for `lease_seconds`, pins its
/// comparison to the machine and marks it running; returns the job with its
/// new attempt.
pub async fn claim(
    conn: &mut PgConnection,
    job_id: i64,
    machine: &MachineRow,
    lease_seconds: f64,
) -> Result<JobRow, Error> {
    let message = format!("claimed by {}", machine.name);
    let job = db::jobs::lease(conn, job_id, machine.id, lease_seconds, &message).await?;
    db::comparisons::pin(
        conn,
        job.comparison_id,
        machine.id,
        machine.inventory_json(),
        true,
    )
    .await?;
    db::events::insert(
        conn,
        job.id,
        JobState::Claimed,
        job.attempt,
        Some(machine.id),
        &message,
        "",
    )
    .await?;
    Ok(job)
}

/// Records a progress state (fetching … uploading) of a (locked, held) job
/// as its runner reported it.
pub async fn progress(
    conn: &mut PgConnection,
    job: &JobRow,
    state: JobState,
    message: &str,
    log_tail: &str,
) -> Result<(), Error> {
    let log_tail = &kept_log_tail(log_tail);
    db::jobs::set_state(conn, job.id, state, message, log_tail).await?;
    db::events::insert(
        conn,
        job.id,
        state,
        job.attempt,
        job.machine_id,
        message,
        log_tail,
    )
    .await?;
    Ok(())
}

/// Takes back every job whose lease ran out (see
/// [`db::jobs::expire_leases`]), records why, and updates the comparisons.
/// Returns how many jobs it took back.
pub async fn expire_leases(conn: &mut PgConnection) -> Result<usize, Error> {
    let expired = db::jobs::expire_leases(conn).await?;
    let mut requeued = false;
    for job in &expired {
        let message = match job.failure_reason {
            None => {
                requeued = true;
                format!("lease of attempt {} ran out; queued again", job.attempt)
            }
            Some(FailureReason::Cancelled) => {
                "lease ran out after the comparison was cancelled".to_string()
            }
            Some(_) => format!(
                "lease ran out in attempt {}, the last one; failed (lease-expired)",
                job.attempt
            ),
        };
        tracing::warn!(job = job.id, comparison = job.comparison_id, "{message}");
        db::events::insert(
            conn,
            job.id,
            job.state,
            job.attempt,
            job.machine_id,
            &message,
            "",
        )
        .await?;
        refresh_status(conn, job.comparison_id).await?;
    }
    if requeued {
        db::notify_jobs_changed(conn).await?;
    }
    Ok(expired.len())
}

/// Finishes a (locked, held) job as done.
pub async fn finish_done(
    conn: &mut PgConnection,
    job: &JobRow,
    log_tail: &str,
) -> Result<(), Error> {
    let log_tail = &kept_log_tail(log_tail);
    db::jobs::finish_done(conn, job.id, log_tail).await?;
    db::events::insert(
        conn,
        job.id,
        JobState::Done,
        job.attempt,
        job.machine_id,
        "done",
        log_tail,
    )
    .await?;
    refresh_status(conn, job.comparison_id).await?;
    db::notify_jobs_changed(conn).await?;
    Ok(())
}

/// Finishes a (locked, held) job as failed; a failure every later job would
/// repeat ([`fails_the_comparison`]) fails the comparison's queued jobs too.
pub async fn finish_failed(
    conn: &mut PgConnection,
    job: &JobRow,
    reason: FailureReason,
    detail: &str,
    log_tail: &str,
) -> Result<(), Error> {
    let log_tail = &kept_log_tail(log_tail);
    db::jobs::finish_failed(conn, job.id, reason, detail, log_tail).await?;
    let message = format!("failed: {}: {detail}", reason.as_str());
    db::events::insert(
        conn,
        job.id,
        JobState::Failed,
        job.attempt,
        job.machine_id,
        &message,
        log_tail,
    )
    .await?;
    if fails_the_comparison(reason) {
        let skipped = format!("{NOT_RUN}job {} {message}", job.seq);
        fail_queued(conn, job.comparison_id, reason, &skipped).await?;
    }
    if matches!(
        reason,
        FailureReason::PatchDoesNotApply | FailureReason::BuildFailed
    ) {
        fail_later_steps(conn, job.comparison_id, reason, detail).await?;
    }
    refresh_status(conn, job.comparison_id).await?;
    db::notify_jobs_changed(conn).await?;
    Ok(())
}

/// When `comparison_id` is step k of a per-patch comparison whose patch
/// does not apply or build, the later steps and the whole series carry
/// that patch too: their queued jobs fail with a message naming it, while
/// the steps before keep their reports.
async fn fail_later_steps(
    conn: &mut PgConnection,
    comparison_id: i64,
    reason: FailureReason,
    detail: &str,
) -> Result<(), Error> {
    let Some(c) = db::comparisons::find(&mut *conn, comparison_id).await? else {
        return Ok(());
    };
    let (Some(parent_id), Some(step)) = (c.parent_id, c.step) else {
        return Ok(());
    };
    let index = usize::try_from(step).unwrap_or(0).saturating_sub(1);
    let subject = db::patches::messages(&mut *conn, c.series_id)
        .await?
        .into_iter()
        .filter(|m| m.has_diff)
        .nth(index)
        .map_or_else(String::new, |m| format!(" `{}`", m.subject));
    let later = db::comparisons::after_step(conn, parent_id, step).await?;
    let what = match reason {
        FailureReason::PatchDoesNotApply => "does not apply",
        _ => "does not build",
    };
    let first_line = detail.lines().next().unwrap_or_default();
    let skipped = format!(
        "{NOT_RUN}patch {step}/{}{subject} {what} (step {step}, comparison {comparison_id}): \
         {first_line}",
        later.len() + usize::try_from(step).unwrap_or(0) - 1
    );
    for id in later {
        fail_queued(conn, id, reason, &skipped).await?;
        refresh_status(conn, id).await?;
    }
    Ok(())
}

/// Cancels a comparison that is not final (with the steps of a per-patch
/// one): marks it cancelled and fails its queued jobs (`cancelled`). Jobs already done stay done; a job a runner
/// holds keeps its lease until the runner, told by its next heartbeat,
/// finishes it as failed (or the lease runs out). A final comparison is a
/// conflict.
pub async fn cancel(conn: &mut PgConnection, id: i64, by: &str) -> Result<(), Error> {
    let current = db::comparisons::lock(conn, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    if current.is_final() {
        return Err(Error::WrongState(format!(
            "comparison {id} is already {current}"
        )));
    }
    db::comparisons::cancel(conn, id).await?;
    let detail = format!("comparison cancelled by `{by}`");
    // No status refresh: a cancelled comparison stays cancelled whatever
    // its jobs do.
    fail_queued(conn, id, FailureReason::Cancelled, &detail).await?;
    // A per-patch comparison's steps go with it.
    for step in db::comparisons::steps(&mut *conn, id).await? {
        if !step.status.is_final() {
            db::comparisons::cancel(conn, step.id).await?;
            fail_queued(conn, step.id, FailureReason::Cancelled, &detail).await?;
        }
    }
    Ok(())
}

/// Brings the comparison's status in step with its jobs, and the status of
/// the comparisons that borrow its runs (a whole series measured by its
/// steps); an A/A comparison that became done sets a new noise floor, which
/// makes the reports of its machine's A/B comparisons stale.
async fn refresh_status(conn: &mut PgConnection, comparison_id: i64) -> Result<(), Error> {
    if db::comparisons::refresh_status(conn, comparison_id).await? {
        let marked = db::reports::mark_floor_changed(conn, comparison_id).await?;
        tracing::info!(
            aa = comparison_id,
            marked,
            "new noise floor: reports of the machine's comparisons to rebuild"
        );
    }
    // An A/A borrows nothing and lends nothing: one level deep.
    for borrower in db::comparisons::borrowers(&mut *conn, comparison_id).await? {
        db::comparisons::refresh_status(conn, borrower).await?;
    }
    Ok(())
}

/// Fails every still-queued job of a comparison with `reason`, each with
/// its event.
async fn fail_queued(
    conn: &mut PgConnection,
    comparison_id: i64,
    reason: FailureReason,
    detail: &str,
) -> Result<(), Error> {
    for (id, attempt) in db::jobs::fail_queued(conn, comparison_id, reason, detail).await? {
        db::events::insert(conn, id, JobState::Failed, attempt, None, detail, "").await?;
    }
    Ok(())
}

/// More boots for a done comparison: raises its runs a side to `runs` with
/// the jobs of `plan` from block `first` on, their boots running only
/// `workloads`, each queued with `why` as its message and event, and makes
/// the comparison live again.
pub async fn add_runs(
    conn: &mut PgConnection,
    comparison_id: i64,
    plan: &BootPlan,
    (first, runs): (usize, i32),
    workloads: &[String],
    max_attempts: u32,
    why: &str,
) -> Result<(), Error> {
    let jobs = create_jobs(
        conn,
        comparison_id,
        plan,
        first,
        max_attempts,
        Some(workloads),
    )
    .await?;
    for job in jobs {
        db::jobs::set_state(conn, job, JobState::Queued, why, "").await?;
        db::events::insert(conn, job, JobState::Queued, 0, None, why, "").await?;
    }
    db::comparisons::add_runs(conn, comparison_id, runs).await?;
    refresh_status(conn, comparison_id).await?;
    Ok(())
}

/// Starts the `lease-sweeper` worker: it takes back expired leases even when
/// no runner is claiming, so progress pages do not show dead runners' jobs
/// as running for ever.
pub fn spawn_lease_sweeper(ctx: &crate::domain::Context) -> tokio::task::JoinHandle<()> {
    use crate::domain::context::workers::{Done, Worker};
    let period = (ctx.config.lease / 4).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(30),
    );
    Worker::every("lease-sweeper", period).spawn(ctx, |ctx| async move {
        let mut tx = ctx.db.begin().await?;
        let n = expire_leases(&mut tx).await?;
        tx.commit().await?;
        if n > 0 {
            tracing::info!(jobs = n, "took back jobs with expired leases");
        }
        Ok(Done::Handled(n as usize))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_tail_that_fits_is_kept_whole() {
        let log = "x".repeat(LOG_TAIL_MAX);
        assert!(matches!(kept_log_tail(&log), Cow::Borrowed(l) if l == log));
    }

    #[test]
    fn a_long_log_tail_keeps_its_end_on_a_character_boundary() {
        let tail = "a".repeat(LOG_TAIL_MAX - 1);
        // The last LOG_TAIL_MAX bytes would start inside the third "é".
        let log = format!("ééé{tail}");
        assert_eq!(
            kept_log_tail(&log),
            format!("[log cut: first 6 bytes dropped]\n{tail}")
        );
    }
}
