//! The runner protocol's job endpoints: claim (long-poll), heartbeat, state,
//! run upload and finish. Every call after the claim names the machine and
//! attempt in the `patchperf-machine` / `patchperf-attempt` headers
//! ([`LeaseClaim`]); `domain::jobs` refuses it unless that machine holds
//! that attempt's lease.

use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::{
    ClaimRequest, ErrorBody, FinishRequest, HeartbeatResponse, JobSpec, JobState,
    MACHINE_STATE_HEADER, PROTOCOL_HEADER, RunUpload, RunUploadResponse, StateUpdate,
};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::domain::{jobs, jobs::queue, machines};
use crate::error::Result;
use crate::http::auth::RunnerAuth;
use crate::http::extract::Json;
use crate::http::lease::{JobCall, LeaseClaim};
use crate::http::openapi::JobCallErrors;

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
/// Requires a runner token (or an admin token). The runner's protocol
/// version comes in the `patchperf-protocol` header (absent: 1); one this
/// server does not speak is refused. A machine an admin drained, paused or
/// retired gets no job: 204 with its state in `patchperf-machine-state`.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/claim",
    request_body = ClaimRequest,
    params(("patchperf-protocol" = Option<u32>, Header, description = "The runner's protocol version (absent: 1).")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A job, leased to the machine.", body = JobSpec),
        (status = 204, description = "No job within the wait; with a `patchperf-machine-state` header (`draining`, `paused`, `retired`) when an admin holds the machine."),
        (status = 400, description = "The body or the protocol header could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a runner or admin token, or the machine is registered under another token.", body = ErrorBody),
        (status = 404, description = "The machine is not registered.", body = ErrorBody),
        (status = 422, description = "The runner speaks a protocol version this server does not.", body = ErrorBody),
    )
)]
async fn claim(
    State(state): State<AppState>,
    auth: RunnerAuth,
    headers: HeaderMap,
    Json(req): Json<ClaimRequest>,
) -> Result<Response> {
    machines::check_protocol(protocol_version(&headers)?)?;
    let machine = machines::machine_for(&state, &auth.caller, req.machine_id).await?;
    let wait = Duration::from_secs(req.wait_seconds.into());
    Ok(match queue::claim_within(&state, &machine, wait).await? {
        queue::Claim::Job(spec) => Json(*spec).into_response(),
        queue::Claim::Nothing => StatusCode::NO_CONTENT.into_response(),
        queue::Claim::Held(held) => (
            StatusCode::NO_CONTENT,
            [(MACHINE_STATE_HEADER, held.as_str())],
        )
            .into_response(),
    })
}

/// The `patchperf-protocol` header's version; 1 without one (runners from
/// before it spoke version 1).
fn protocol_version(headers: &HeaderMap) -> Result<u32> {
    let Some(value) = headers.get(PROTOCOL_HEADER) else {
        return Ok(1);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            crate::Error::Malformed(format!(
                "header `{PROTOCOL_HEADER}` must be a protocol version number"
            ))
        })
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
    call: JobCall,
) -> Result<Json<HeartbeatResponse>> {
    Ok(Json(
        jobs::heartbeat(&state, &call.machine, call.job_id, call.lease).await?,
    ))
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
    call: JobCall,
    Json(update): Json<StateUpdate>,
) -> Result<StatusCode> {
    jobs::progress(&state, &call.machine, call.job_id, call.lease, &update).await?;
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
    call: JobCall,
    Json(upload): Json<RunUpload>,
) -> Result<(StatusCode, Json<RunUploadResponse>)> {
    let answer = jobs::accept_run(&state, &call.machine, call.job_id, call.lease, &upload).await?;
    let status = if answer.stored {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(answer)))
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
    call: JobCall,
    Json(req): Json<FinishRequest>,
) -> Result<Json<FinishResponse>> {
    let done = jobs::finish(&state, &call.machine, call.job_id, call.lease, &req).await?;
    tracing::info!(job = call.job_id, outcome = %done.state, machine = %call.machine.name, "job finished");
    Ok(Json(FinishResponse {
        state: done.state,
        comparison_status: done.comparison_status,
    }))
}
