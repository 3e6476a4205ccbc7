//! The runner protocol's job endpoints: claim (long-poll), heartbeat, state,
//! run upload and finish. Every call after the claim names the machine and
//! attempt in the `patchperf-machine` / `patchperf-attempt` headers and is
//! refused unless that machine holds that attempt's lease.

use std::collections::HashSet;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::{
    ClaimRequest, ErrorBody, FinishRequest, HeartbeatResponse, JobSpec, JobState, NrTask,
    RunUpload, RunUploadResponse, StateUpdate,
};
use patchperf_common::run::RunResult;
use serde::Serialize;
use sqlx::PgConnection;
use tokio::time::Instant;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db;
use crate::db::comparisons::ComparisonRow;
use crate::db::jobs::JobRow;
use crate::domain::{lifecycle, queue};
use crate::error::Result;
use crate::http::auth::RunnerAuth;
use crate::http::extract::{Json, Path};
use crate::http::lease::{LeaseClaim, check_held, held_job};
use crate::http::openapi::JobCallErrors;
use crate::http::runner::machine_for;
use crate::{AppState, Error};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(claim))
        .routes(routes!(heartbeat))
        .routes(routes!(state_update))
        .routes(routes!(upload_run))
        .routes(routes!(finish))
}

/// Claim the next job (long-poll up to ~30 s); the claim is a lease.
///
/// Requires a runner token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/jobs/claim",
    request_body = ClaimRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A job, leased to the machine.", body = JobSpec),
        (status = 204, description = "No job within the wait."),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a runner or admin token, or the machine is registered under another token.", body = ErrorBody),
        (status = 404, description = "The machine is not registered.", body = ErrorBody),
    )
)]

async fn claim(
    State(state): State<AppState>,
    auth: RunnerAuth,
    Json(req): Json<ClaimRequest>,
) -> Result<Response> {
    let machine = machine_for(&state, &auth.caller, req.machine_id).await?;
    db::machines::touch(&state.db, machine.id).await?;
    let wait = Duration::from_secs(req.wait_seconds.into()).min(state.config.claim_wait_max);
    let deadline = Instant::now() + wait;
    let mut shutting_down = state.shutting_down.subscribe();
    loop {
        // Registered before looking, so a job submitted between the look
        // and the wait still wakes us.
        let woken = state.jobs_changed.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();

        let mut tx = state.db.begin().await?;
        let spec = queue::claim(&mut tx, &machine, &state.config).await?;
        tx.commit().await?;
        if let Some(spec) = spec {
            tracing::info!(job = spec.job_id, attempt = spec.attempt, machine = %machine.name, "job claimed");
            return Ok(Json(spec).into_response());
        }
        let now = Instant::now();
        if now >= deadline || *shutting_down.borrow() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        let nap = (deadline - now).min(state.config.claim_poll);
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(nap) => {}
            _ = shutting_down.changed() => {}
        }
    }
}

/// Extend the lease; learn whether the comparison was cancelled.
///
/// Requires a runner token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/heartbeat",
    params(("id" = i64, Path, description = "Job id."), LeaseClaim),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Lease extended.", body = HeartbeatResponse),
        JobCallErrors,
    )
)]
async fn heartbeat(
    State(state): State<AppState>,
    auth: RunnerAuth,
    lease: LeaseClaim,
    Path(job_id): Path<i64>,
) -> Result<Json<HeartbeatResponse>> {
    let machine = machine_for(&state, &auth.caller, lease.machine_id).await?;
    let mut tx = state.db.begin().await?;
    let job = held_job(&mut tx, &machine, job_id, lease).await?;
    db::jobs::extend_lease(&mut tx, job.id, state.config.lease.as_secs_f64()).await?;
    db::machines::touch(&mut *tx, machine.id).await?;
    let status = db::comparisons::lock(&mut tx, job.comparison_id).await?;
    tx.commit().await?;
    Ok(Json(HeartbeatResponse {
        lease_seconds: queue::lease_seconds(&state.config),
        cancelled: status == Some(ComparisonStatus::Cancelled),
    }))
}

/// Report a progress state with a message and the log tail.
///
/// Requires a runner token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/state",
    request_body = StateUpdate,
    params(("id" = i64, Path, description = "Job id."), LeaseClaim),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Recorded."),
        JobCallErrors,
    )
)]
async fn state_update(
    State(state): State<AppState>,
    auth: RunnerAuth,
    lease: LeaseClaim,
    Path(job_id): Path<i64>,
    Json(update): Json<StateUpdate>,
) -> Result<StatusCode> {
    if !update.state.is_progress() {
        return Err(Error::Invalid(format!(
            "`{}` is not a progress state (fetching, applying, building, booting, running, \
             uploading); end a job with POST /api/v1/jobs/{job_id}/finish",
            update.state.as_str()
        )));
    }
    let machine = machine_for(&state, &auth.caller, lease.machine_id).await?;
    let mut tx = state.db.begin().await?;
    let job = held_job(&mut tx, &machine, job_id, lease).await?;
    lifecycle::progress(
        &mut tx,
        &job,
        update.state,
        &update.message,
        &update.log_tail,
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Upload one run (idempotent per boot, workload, nr_task, mode).
///
/// Requires a runner token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/runs",
    request_body = RunUpload,
    params(("id" = i64, Path, description = "Job id."), LeaseClaim),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Stored.", body = RunUploadResponse),
        (status = 200, description = "Already stored before; nothing written.", body = RunUploadResponse),
        JobCallErrors,
    )
)]
async fn upload_run(
    State(state): State<AppState>,
    auth: RunnerAuth,
    lease: LeaseClaim,
    Path(job_id): Path<i64>,
    Json(upload): Json<RunUpload>,
) -> Result<(StatusCode, Json<RunUploadResponse>)> {
    let machine = machine_for(&state, &auth.caller, lease.machine_id).await?;
    let mut tx = state.db.begin().await?;
    let job = held_job(&mut tx, &machine, job_id, lease).await?;
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
        state.reports_stale.notify_one();
    }
    let status = if stored {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(RunUploadResponse { run_id, stored })))
}

/// Checks a run against what its comparison asked for, then that every
/// number is one a real run can produce ([`RunResult::validate`]).
fn validate_run(comparison: &ComparisonRow, run: &RunResult) -> Result<()> {
    let bad = |m: String| Err(Error::Invalid(m));
    if !comparison.workloads.contains(&run.workload) {
        return bad(format!(
            "workload `{}` is not part of comparison {} (it asks for {})",
            run.workload,
            comparison.id,
            comparison.workloads.join(", ")
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
    if let Some(backend) = &comparison.backend {
        if run.measurement.as_str() != backend {
            return bad(format!(
                "run was measured with {} but comparison {} asks for {backend}",
                run.measurement.as_str(),
                comparison.id
            ));
        }
    }
    run.validate().map_err(|e| Error::Invalid(e.to_string()))
}

/// Answer of `POST /api/v1/jobs/{id}/finish`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FinishResponse {
    /// The job's final state.
    pub state: JobState,
    /// The comparison's status afterwards.
    pub comparison_status: ComparisonStatus,
}

/// Finish the job as done (every boot has every workload) or failed with a reason.
///
/// Requires a runner token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/finish",
    request_body = FinishRequest,
    params(("id" = i64, Path, description = "Job id."), LeaseClaim),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Finished.", body = FinishResponse),
        JobCallErrors,
    )
)]
async fn finish(
    State(state): State<AppState>,
    auth: RunnerAuth,
    lease: LeaseClaim,
    Path(job_id): Path<i64>,
    Json(req): Json<FinishRequest>,
) -> Result<Json<FinishResponse>> {
    let machine = machine_for(&state, &auth.caller, lease.machine_id).await?;
    let mut tx = state.db.begin().await?;
    let job = db::jobs::lock(&mut tx, job_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {job_id}")))?;
    let wanted = match &req {
        FinishRequest::Done { .. } => JobState::Done,
        FinishRequest::Failed { .. } => JobState::Failed,
    };
    // A retried finish (its answer was lost) finds the job already final
    // with the same outcome from the same lease: answer as the first time.
    let repeat =
        job.state == wanted && job.machine_id == Some(machine.id) && job.attempt == lease.attempt;
    if !repeat {
        check_held(&job, &machine, lease)?;
        match &req {
            FinishRequest::Done { log_tail } => {
                check_complete(&mut tx, &job).await?;
                lifecycle::finish_done(&mut tx, &job, log_tail).await?;
                crate::domain::more_runs::add_if_undecided(&state, &mut tx, job.comparison_id)
                    .await?;
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
    tracing::info!(job = job.id, outcome = %wanted, machine = %machine.name, "job finished");
    Ok(Json(FinishResponse {
        state: wanted,
        comparison_status: status,
    }))
}

/// A job is done only when every boot has a run of every workload.
async fn check_complete(conn: &mut PgConnection, job: &JobRow) -> Result<()> {
    let comparison = db::comparisons::find(&mut *conn, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {} has no comparison", job.id)))?;
    let stored: HashSet<(i32, String)> = db::runs::boot_workloads_of_job(&mut *conn, job.id)
        .await?
        .into_iter()
        .collect();
    let mut missing = Vec::new();
    for boot in db::boots::for_job(&mut *conn, job.id).await? {
        for workload in &comparison.workloads {
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
