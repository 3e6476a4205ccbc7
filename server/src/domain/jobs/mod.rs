//! What a runner does with a job it holds, apart from how it asks: extend
//! the lease, report progress, hand in a run, finish. Every call names the
//! machine and the attempt holding the lease and is refused unless that
//! machine holds that attempt's lease; each is one transaction. Beside it,
//! what happens to jobs apart from the runner holding one: claiming
//! ([`queue`]), every state change with its event row ([`lifecycle`]), the
//! boot order ([`interleave`]), more runs while undecided ([`more_runs`]),
//! the run length left to the mode ([`run_length`]), why a comparison waits
//! ([`waiting`]), which kernels its jobs built ([`kernel_builds`]) and a
//! job's log as its page shows it ([`log`]).

pub mod interleave;
pub mod kernel_builds;
pub mod lifecycle;
pub mod log;
pub mod more_runs;
pub mod queue;
pub mod run_length;
pub mod waiting;

use std::collections::HashSet;

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::{
    FinishRequest, HeartbeatResponse, JobState, NrTask, RunUpload, RunUploadResponse, StateUpdate,
};
use patchperf_common::run::RunResult;
use sqlx::PgConnection;

use crate::Error;
use crate::db::comparisons::ComparisonRow;
use crate::db::{self, jobs::JobRow, machines::MachineRow};
use crate::domain::Context;

/// The lease a job call claims to hold: the machine and the attempt
/// (`JobSpec.attempt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The machine holding it.
    pub machine_id: i64,
    /// The attempt holding it.
    pub attempt: i32,
}

/// A finished job: its final state and its comparison's status after.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// The job's final state.
    pub state: JobState,
    /// The comparison's status afterwards.
    pub comparison_status: ComparisonStatus,
}

/// Extends `machine`'s lease of job `job_id`; tells whether its comparison
/// was cancelled.
pub async fn heartbeat(
    ctx: &Context,
    machine: &MachineRow,
    job_id: i64,
    lease: Lease,
) -> Result<HeartbeatResponse, Error> {
    let mut tx = ctx.db.begin().await?;
    let job = held_job(&mut tx, machine, job_id, lease).await?;
    db::jobs::extend_lease(&mut tx, job.id, ctx.config.lease.as_secs_f64()).await?;
    db::machines::touch(&mut *tx, machine.id).await?;
    let status = db::comparisons::lock(&mut tx, job.comparison_id).await?;
    tx.commit().await?;
    Ok(HeartbeatResponse {
        lease_seconds: queue::lease_seconds(&ctx.config),
        cancelled: status == Some(ComparisonStatus::Cancelled),
    })
}

/// Records a progress state of job `job_id` with its message and log tail.
pub async fn progress(
    ctx: &Context,
    machine: &MachineRow,
    job_id: i64,
    lease: Lease,
    update: &StateUpdate,
) -> Result<(), Error> {
    if !update.state.is_progress() {
        return Err(Error::Invalid(format!(
            "`{}` is not a progress state (fetching, applying, building, booting, running, \
             uploading); end a job with POST /api/v1/jobs/{job_id}/finish",
            update.state.as_str()
        )));
    }
    let mut tx = ctx.db.begin().await?;
    let job = held_job(&mut tx, machine, job_id, lease).await?;
    lifecycle::progress(
        &mut tx,
        &job,
        update.state,
        &update.message,
        &update.log_tail,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Accepts one run of job `job_id`: checked against its boot and what its
/// comparison asked for, stored once (a repeat stores nothing and says so),
/// and the comparison's report marked to build again.
pub async fn accept_run(
    ctx: &Context,
    machine: &MachineRow,
    job_id: i64,
    lease: Lease,
    upload: &RunUpload,
) -> Result<RunUploadResponse, Error> {
    let mut tx = ctx.db.begin().await?;
    let job = held_job(&mut tx, machine, job_id, lease).await?;
    let comparison = db::comparisons::find(&mut *tx, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {job_id} has no comparison")))?;
    // The lease outlives a cancel until the runner hears of it by heartbeat;
    // its runs would count in a report nobody wants any more.
    if comparison.status == ComparisonStatus::Cancelled {
        return Err(Error::WrongState(format!(
            "comparison {} was cancelled; its runs are no longer wanted: finish job {job_id} \
             as failed (cancelled)",
            comparison.id
        )));
    }

    let boots = db::boots::for_job(&mut *tx, job.id).await?;
    let seq = i32::try_from(upload.boot.seq).unwrap_or(i32::MAX);
    let boot = boots.iter().find(|b| b.seq == seq).ok_or_else(|| {
        let own: Vec<String> = boots.iter().map(|b| b.seq.to_string()).collect();
        Error::Invalid(format!(
            "boot {} is not a boot of job {job_id} (its boots are {})",
            upload.boot.seq,
            own.join(", ")
        ))
    })?;
    if boot.side != upload.boot.side {
        return Err(Error::Invalid(format!(
            "boot {} is a {} boot, not {}",
            boot.seq,
            boot.side.as_str(),
            upload.boot.side.as_str()
        )));
    }
    validate_run(&comparison, &upload.result)?;
    if let Some(own) = job
        .workloads
        .as_ref()
        .filter(|w| !w.contains(&upload.result.workload))
    {
        return Err(Error::Invalid(format!(
            "job {job_id}'s boots run only {} (added while those were undecided), not `{}`",
            own.join(", "),
            upload.result.workload
        )));
    }

    let key = db::runs::RunKey {
        comparison_id: job.comparison_id,
        job_id: job.id,
        boot_seq: boot.seq,
        side: boot.side,
        attempt: job.attempt,
        machine_id: machine.id,
    };
    let (run_id, stored) = db::runs::insert(&mut tx, &key, &upload.result).await?;
    if stored {
        db::reports::mark_stale(&mut tx, job.comparison_id).await?;
    }
    tx.commit().await?;
    if stored {
        ctx.reports_stale.notify_one();
    }
    Ok(RunUploadResponse { run_id, stored })
}

/// Finishes job `job_id` as done (every boot has every workload; boots are
/// added while a headline verdict is undecided) or failed. A retried finish
/// whose answer was lost finds the job final with the same outcome from the
/// same lease and is answered as the first time.
pub async fn finish(
    ctx: &Context,
    machine: &MachineRow,
    job_id: i64,
    lease: Lease,
    req: &FinishRequest,
) -> Result<Finished, Error> {
    // Taken before the transaction's connection (Context::finishes).
    let _slot = ctx
        .finishes
        .acquire()
        .await
        .map_err(|_| Error::Internal("the job finish slots are closed".into()))?;
    let mut tx = ctx.db.begin().await?;
    let job = db::jobs::lock(&mut tx, job_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {job_id}")))?;
    let wanted = match req {
        FinishRequest::Done { .. } => JobState::Done,
        FinishRequest::Failed { .. } => JobState::Failed,
    };
    let repeat =
        job.state == wanted && job.machine_id == Some(machine.id) && job.attempt == lease.attempt;
    if !repeat {
        check_held(&job, machine, lease)?;
        match req {
            FinishRequest::Done { log_tail } => {
                check_complete(&mut tx, &job).await?;
                lifecycle::finish_done(&mut tx, &job, log_tail).await?;
                more_runs::after_finish(ctx, &mut tx, job.comparison_id).await?;
            }
            FinishRequest::Failed {
                reason,
                detail,
                log_tail,
            } => {
                lifecycle::finish_failed(&mut tx, &job, *reason, detail, log_tail).await?;
            }
        }
    }
    let status = db::comparisons::lock(&mut tx, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {} has no comparison", job.id)))?;
    tx.commit().await?;
    if status.is_final() {
        ctx.comparison_settled.notify_waiters();
    }
    Ok(Finished {
        state: wanted,
        comparison_status: status,
    })
}

/// Locks the job and checks that `lease` holds it. A lease past its expiry
/// that nobody has taken back yet still counts: only a requeue ends it.
async fn held_job(
    conn: &mut PgConnection,
    machine: &MachineRow,
    job_id: i64,
    lease: Lease,
) -> Result<JobRow, Error> {
    let job = db::jobs::lock(conn, job_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {job_id}")))?;
    check_held(&job, machine, lease)?;
    Ok(job)
}

/// Checks that `lease` holds `job`, already locked by the caller.
fn check_held(job: &JobRow, machine: &MachineRow, lease: Lease) -> Result<(), Error> {
    if !job.state.is_leased() {
        // A queued job with no attempt yet was never claimed; one with
        // attempts was, and went back to the queue when its lease ran out.
        let why = match job.state {
            JobState::Queued if job.attempt == 0 => " (it was never claimed)",
            JobState::Queued => " (its lease ran out and it was queued again)",
            _ => "",
        };
        return Err(Error::WrongState(format!(
            "job {} is {}, not leased to anyone{why}",
            job.id, job.state
        )));
    }
    if job.machine_id != Some(machine.id) {
        return Err(Error::WrongState(format!(
            "job {} is leased to another machine, not to `{}`",
            job.id, machine.name
        )));
    }
    if job.attempt != lease.attempt {
        return Err(Error::WrongState(format!(
            "job {} is in attempt {}; the lease of attempt {} ran out",
            job.id, job.attempt, lease.attempt
        )));
    }
    Ok(())
}

/// Checks a run against what its comparison asked for, then that every
/// number is one a real run can produce ([`RunResult::validate`]).
fn validate_run(comparison: &ComparisonRow, run: &RunResult) -> Result<(), Error> {
    let bad = |m: String| Err(Error::Invalid(m));
    if !comparison.asked.workloads.contains(&run.workload) {
        return bad(format!(
            "workload `{}` is not part of comparison {} (it asks for {})",
            run.workload,
            comparison.id,
            comparison.asked.workloads.join(", ")
        ));
    }
    let params = &comparison.params.0;
    if run.mode != params.mode {
        return bad(format!(
            "run is in {} mode but comparison {} asks for {} mode",
            run.mode.as_str(),
            comparison.id,
            params.mode.as_str()
        ));
    }
    // Percentages resolve against the guest's CPUs, which only the runner
    // knows; plain counts must match.
    let any_percent = params
        .nr_task
        .iter()
        .any(|n| matches!(n, NrTask::Percent(_)));
    if run.nr_task == 0 || (!any_percent && !params.nr_task.contains(&NrTask::Count(run.nr_task))) {
        let asked: Vec<String> = params.nr_task.iter().map(ToString::to_string).collect();
        return bad(format!(
            "nr_task {} is not one comparison {} asks for ({})",
            run.nr_task,
            comparison.id,
            asked.join(", ")
        ));
    }
    if let Some(backend) = comparison.asked.backend {
        if run.measurement != backend {
            return bad(format!(
                "run was measured with {} but comparison {} asks for {}",
                run.measurement.as_str(),
                comparison.id,
                backend.as_str()
            ));
        }
    }
    run.validate().map_err(|e| Error::Invalid(e.to_string()))
}

/// A job is done only when every boot has a run of every workload.
async fn check_complete(conn: &mut PgConnection, job: &JobRow) -> Result<(), Error> {
    let comparison = db::comparisons::find(&mut *conn, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {} has no comparison", job.id)))?;
    let stored: HashSet<(i32, String)> = db::runs::boot_workloads_of_job(&mut *conn, job.id)
        .await?
        .into_iter()
        .collect();
    let mut missing = Vec::new();
    let workloads = job
        .workloads
        .as_ref()
        .unwrap_or(&comparison.asked.workloads);
    for boot in db::boots::for_job(&mut *conn, job.id).await? {
        for workload in workloads {
            if !stored.contains(&(boot.seq, workload.clone())) {
                missing.push(format!("boot {} {workload}", boot.seq));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "job {} cannot be done: no run uploaded for {}; upload them or finish as failed \
             (no-results)",
            job.id,
            missing.join(", ")
        )))
    }
}
