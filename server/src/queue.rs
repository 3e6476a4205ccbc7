//! The job queue as the protocol sees it: expanding a comparison into jobs,
//! leasing the next job to a machine, taking back jobs whose lease ran out,
//! and finishing jobs. Each function works inside the caller's transaction
//! and keeps the comparison's status in step with its jobs.

use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::Side;
use sqlx::PgConnection;

use crate::db::{self, jobs::JobRow, machines::MachineRow};
use crate::interleave::BootPlan;
use crate::{Config, Error};

/// Creates the jobs and boots of a comparison's plan from block `first`
/// on (0 for a new comparison; the runs a side so far when more are added);
/// returns the new jobs' ids.
pub async fn create_jobs(
    conn: &mut PgConnection,
    comparison_id: i64,
    plan: &BootPlan,
    first: usize,
    max_attempts: u32,
) -> Result<Vec<i64>, Error> {
    let max_attempts = i32::try_from(max_attempts).unwrap_or(i32::MAX);
    let mut job_ids = Vec::with_capacity(plan.blocks.len().saturating_sub(first));
    for block in first..plan.blocks.len() {
        let seq = i32::try_from(block).unwrap_or(i32::MAX);
        job_ids.push(db::jobs::insert(conn, comparison_id, seq, max_attempts).await?);
    }
    for (seq, block, side) in plan.boots().filter(|b| b.1 >= first) {
        let seq = i32::try_from(seq).unwrap_or(i32::MAX);
        db::boots::insert(conn, comparison_id, seq, job_ids[block - first], side).await?;
    }
    db::notify_jobs_changed(conn).await?;
    Ok(job_ids)
}

/// Takes back every job whose lease ran out (see
/// [`db::jobs::expire_leases`]), records why, and updates the comparisons.
/// Returns how many jobs it took back.
pub async fn expire_leases(conn: &mut PgConnection) -> Result<usize, Error> {
    let expired = db::jobs::expire_leases(conn).await?;
    let mut requeued = false;
    for job in &expired {
        let message = match job.failure_reason.as_deref() {
            None => {
                requeued = true;
                format!("lease of attempt {} ran out; queued again", job.attempt)
            }
            Some("cancelled") => "lease ran out after the comparison was cancelled".to_string(),
            Some(_) => format!(
                "lease ran out in attempt {}, the last one; failed (lease-expired)",
                job.attempt
            ),
        };
        tracing::warn!(job = job.id, comparison = job.comparison_id, "{message}");
        db::events::insert(
            conn,
            job.id,
            &job.state,
            job.attempt,
            job.machine_id,
            &message,
            "",
        )
        .await?;
        db::comparisons::refresh_status(conn, job.comparison_id).await?;
    }
    if requeued {
        db::notify_jobs_changed(conn).await?;
    }
    Ok(expired.len())
}

/// Leases the next claimable job to `machine` and returns what the runner
/// needs to execute it, or `None` when there is nothing for this machine.
pub async fn claim(
    conn: &mut PgConnection,
    machine: &MachineRow,
    config: &Config,
) -> Result<Option<JobSpec>, Error> {
    expire_leases(conn).await?;
    let Some(job_id) = db::jobs::next_claimable(conn, machine.id, &machine.backends).await? else {
        return Ok(None);
    };
    let message = format!("claimed by {}", machine.name);
    let job = db::jobs::lease(
        conn,
        job_id,
        machine.id,
        config.lease.as_secs_f64(),
        &message,
    )
    .await?;
    db::comparisons::pin_and_start(
        conn,
        job.comparison_id,
        machine.id,
        machine.inventory_json(),
    )
    .await?;
    db::events::insert(
        conn,
        job.id,
        JobState::Claimed.as_str(),
        job.attempt,
        Some(machine.id),
        &message,
        "",
    )
    .await?;
    spec(conn, &job, config).await.map(Some)
}

async fn spec(conn: &mut PgConnection, job: &JobRow, config: &Config) -> Result<JobSpec, Error> {
    let comparison = db::comparisons::find(&mut *conn, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {} has no comparison", job.id)))?;
    let (mbox, patches_sha256) = db::patches::mbox(&mut *conn, comparison.series_id).await?;
    let boots = db::boots::for_job(&mut *conn, job.id)
        .await?
        .into_iter()
        .map(|b| {
            Ok(BootSlot {
                seq: u32::try_from(b.seq)
                    .map_err(|_| Error::Internal("negative boot seq".into()))?,
                side: parse_side(&b.side)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let backend = comparison
        .backend
        .as_deref()
        .map(|b| {
            serde_json::from_value(serde_json::Value::String(b.to_string()))
                .map_err(|e| Error::Internal(format!("stored backend {b:?}: {e}")))
        })
        .transpose()?;
    Ok(JobSpec {
        job_id: job.id,
        comparison_id: job.comparison_id,
        attempt: u32::try_from(job.attempt).unwrap_or(0),
        lease_seconds: lease_seconds(config),
        base: comparison.base.0,
        mbox,
        aa: comparison.kind == db::comparisons::kind::AA,
        patches_sha256,
        config_fragment: comparison.config_fragment,
        workloads: comparison.workloads,
        params: comparison.params.0,
        backend,
        boots,
    })
}

/// The lease length in whole seconds as told to runners (at least 1).
pub fn lease_seconds(config: &Config) -> u32 {
    u32::try_from(config.lease.as_secs())
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Reads a stored side.
pub fn parse_side(side: &str) -> Result<Side, Error> {
    match side {
        "base" => Ok(Side::Base),
        "patched" => Ok(Side::Patched),
        other => Err(Error::Internal(format!("stored side {other:?}"))),
    }
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

/// Finishes a (locked, held) job as done.
pub async fn finish_done(
    conn: &mut PgConnection,
    job: &JobRow,
    log_tail: &str,
) -> Result<(), Error> {
    db::jobs::finish_done(conn, job.id, log_tail).await?;
    db::events::insert(
        conn,
        job.id,
        JobState::Done.as_str(),
        job.attempt,
        job.machine_id,
        "done",
        log_tail,
    )
    .await?;
    db::comparisons::refresh_status(conn, job.comparison_id).await?;
    db::notify_jobs_changed(conn).await?;
    Ok(())
}

/// Finishes a (locked, held) job as failed; a failure every later job would
/// repeat fails the comparison's queued jobs too.
pub async fn finish_failed(
    conn: &mut PgConnection,
    job: &JobRow,
    reason: FailureReason,
    detail: &str,
    log_tail: &str,
) -> Result<(), Error> {
    db::jobs::finish_failed(conn, job.id, reason.code(), detail, log_tail).await?;
    let message = format!("failed: {}: {detail}", reason.as_str());
    db::events::insert(
        conn,
        job.id,
        JobState::Failed.as_str(),
        job.attempt,
        job.machine_id,
        &message,
        log_tail,
    )
    .await?;
    if fails_the_comparison(reason) {
        let skipped = format!("not run: job {} {message}", job.seq);
        for (id, attempt) in
            db::jobs::fail_queued(conn, job.comparison_id, reason.code(), &skipped).await?
        {
            db::events::insert(
                conn,
                id,
                JobState::Failed.as_str(),
                attempt,
                None,
                &skipped,
                "",
            )
            .await?;
        }
    }
    db::comparisons::refresh_status(conn, job.comparison_id).await?;
    db::notify_jobs_changed(conn).await?;
    Ok(())
}
