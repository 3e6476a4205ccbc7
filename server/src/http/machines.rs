//! Runner machines: `POST /api/v1/runner/register`, by which a runner
//! creates or updates its machine (and learns the protocol versions and
//! its state); `GET /api/v1/machines` and `GET /api/v1/machines/{name}`,
//! the fleet with each machine's inventory, state, jobs in hand, queue and
//! noise floors, so CI can pick one to pin a comparison to; and the admin's
//! steering: `POST /api/v1/machines/{name}/drain`, `…/pause`, `…/resume`,
//! `…/retire`, and its pools: `PUT /api/v1/machines/{name}/labels`.

use axum::extract::State;
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{
    ErrorBody, OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION, RegisterRequest, RegisterResponse,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::domain::machines::{self, Fleet, FleetMachine};
use crate::error::Result;
use crate::http::auth::{AdminAuth, RunnerAuth};
use crate::http::extract::{Json, Path, Query};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(list))
        .routes(routes!(one))
        .routes(routes!(drain))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(retire))
        .routes(routes!(labels))
}

/// `GET /api/v1/machines` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MachineListQuery {
    /// List retired machines too.
    #[serde(default)]
    pub retired: bool,
}

/// `GET /api/v1/machines` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineList {
    /// By name: id, name, inventory, when registered and last seen
    /// (`last_seen`, `heard_seconds_ago`), `state` (`active`, `draining`,
    /// `paused`, `retired`) with `state_note` and `state_changed_at`,
    /// `drained`, the jobs in hand (`jobs`, by id, each with id,
    /// comparison_id, state, message, lease_expires_at; `job`, the last of
    /// them), `queued` (jobs only it may run),
    /// `noise_floors`, its `labels` (the pools it is in) and the
    /// `protocol_version` it registered with.
    #[schema(value_type = Vec<Object>)]
    pub machines: Vec<FleetMachine>,
    /// Queued jobs any machine may take.
    pub queued_any: i64,
}

/// The fleet: registered machines (retired ones with `?retired=true`),
/// their inventory, state, jobs in hand, queue and noise floors.
#[utoipa::path(
    get,
    path = "/api/v1/machines",
    params(MachineListQuery),
    responses(
        (status = 200, description = "Machines by name.", body = MachineList),
        (status = 400, description = "The query could not be read.", body = ErrorBody),
    )
)]
async fn list(
    State(state): State<AppState>,
    Query(q): Query<MachineListQuery>,
) -> Result<Json<MachineList>> {
    let Fleet {
        machines,
        queued_any,
    } = machines::fleet(&state, q.retired).await?;
    Ok(Json(MachineList {
        machines,
        queued_any,
    }))
}

/// One machine, whatever its state, as the fleet's list shows it.
#[utoipa::path(
    get,
    path = "/api/v1/machines/{name}",
    params(("name" = String, Path, description = "Machine name.")),
    responses(
        (status = 200, description = "The machine.", body = Object),
        (status = 404, description = "No such machine.", body = ErrorBody),
    )
)]
async fn one(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<FleetMachine>> {
    Ok(Json(machines::fleet_machine(&state, &name).await?))
}

/// An admin's state change: why, in a line the pages show.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateChangeQuery {
    /// Why (one line, at most 200 characters), shown beside the state.
    #[serde(default)]
    pub note: String,
}

/// Drain a machine: it finishes the job in hand and claims nothing new
/// until resumed (`drained` in the answer once it holds no job).
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/machines/{name}/drain",
    params(("name" = String, Path, description = "Machine name."), StateChangeQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Draining; the machine as the list shows it.", body = Object),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such machine.", body = ErrorBody),
        (status = 422, description = "The note is too long or not one line.", body = ErrorBody),
    )
)]
async fn drain(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(name): Path<String>,
    Query(q): Query<StateChangeQuery>,
) -> Result<Json<FleetMachine>> {
    steer(&state, &admin, &name, MachineState::Draining, &q.note).await
}

/// Pause a machine: it claims nothing until resumed; a job in hand still
/// finishes.
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/machines/{name}/pause",
    params(("name" = String, Path, description = "Machine name."), StateChangeQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Paused; the machine as the list shows it.", body = Object),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such machine.", body = ErrorBody),
        (status = 422, description = "The note is too long or not one line.", body = ErrorBody),
    )
)]
async fn pause(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(name): Path<String>,
    Query(q): Query<StateChangeQuery>,
) -> Result<Json<FleetMachine>> {
    steer(&state, &admin, &name, MachineState::Paused, &q.note).await
}

/// Resume a drained, paused or retired machine: it claims again.
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/machines/{name}/resume",
    params(("name" = String, Path, description = "Machine name."), StateChangeQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Active; the machine as the list shows it.", body = Object),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such machine.", body = ErrorBody),
        (status = 422, description = "The note is too long or not one line.", body = ErrorBody),
    )
)]
async fn resume(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(name): Path<String>,
    Query(q): Query<StateChangeQuery>,
) -> Result<Json<FleetMachine>> {
    steer(&state, &admin, &name, MachineState::Active, &q.note).await
}

/// Retire a machine: it never claims again (unless resumed), is left out
/// of the lists and may no longer be named by a comparison; its history is
/// kept. A machine holding a job is refused: drain it first.
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/machines/{name}/retire",
    params(("name" = String, Path, description = "Machine name."), StateChangeQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Retired; the machine as the list shows it.", body = Object),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such machine.", body = ErrorBody),
        (status = 409, description = "The machine holds a job; drain it first.", body = ErrorBody),
        (status = 422, description = "The note is too long or not one line.", body = ErrorBody),
    )
)]
async fn retire(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(name): Path<String>,
    Query(q): Query<StateChangeQuery>,
) -> Result<Json<FleetMachine>> {
    steer(&state, &admin, &name, MachineState::Retired, &q.note).await
}

/// `PUT /api/v1/machines/{name}/labels` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineLabels {
    /// The pools the machine is in: at most 16, each 1–32 characters of
    /// a–z, 0–9, `-`, `_`, `.`; replaces the ones it had (`[]`: none).
    pub labels: Vec<String>,
}

/// Set a machine's labels: the pools a comparison may ask for (`pool`)
/// instead of one machine.
///
/// Requires an admin token.
#[utoipa::path(
    put,
    path = "/api/v1/machines/{name}/labels",
    params(("name" = String, Path, description = "Machine name.")),
    request_body = MachineLabels,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Labelled; the machine as the list shows it.", body = Object),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such machine.", body = ErrorBody),
        (status = 422, description = "Too many labels, or one that is not a plain word.", body = ErrorBody),
    )
)]
async fn labels(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(name): Path<String>,
    Json(req): Json<MachineLabels>,
) -> Result<Json<FleetMachine>> {
    let machine = machines::set_labels(&state, &name, &req.labels).await?;
    tracing::info!(machine = %name, labels = ?machine.machine.labels, by = %admin.caller.name, "machine labelled");
    Ok(Json(machine))
}

/// What the four state routes share: the change, logged with who made it.
async fn steer(
    state: &AppState,
    admin: &AdminAuth,
    name: &str,
    to: MachineState,
    note: &str,
) -> Result<Json<FleetMachine>> {
    let machine = machines::set_state(state, name, to, note).await?;
    tracing::info!(machine = %name, state = %to, by = %admin.caller.name, "machine state set");
    Ok(Json(machine))
}

/// Create or update this runner's machine (by name).
///
/// Requires a runner token (or an admin token). A machine belongs to the
/// token that registered it first; another runner token registering the
/// name gets 409 until an admin revokes the owner (or an admin token takes
/// the machine over by registering it). A runner speaking a protocol
/// version this server does not is refused with 422 naming both; the
/// answer tells the runner which versions the server speaks and its
/// machine's state.
#[utoipa::path(
    post,
    path = "/api/v1/runner/register",
    request_body = RegisterRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Registered.", body = RegisterResponse),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a runner or admin token, or the machine is registered under another token.", body = ErrorBody),
        (status = 413, description = "Body larger than the server's limit.", body = ErrorBody),
        (status = 422, description = "Invalid name or inventory, or a protocol version this server does not speak.", body = ErrorBody),
    )
)]
async fn register(
    State(state): State<AppState>,
    auth: RunnerAuth,
    Json(req): Json<RegisterRequest>,
) -> Result<Json<RegisterResponse>> {
    let (machine_id, machine_state) = machines::register(&state, &auth.caller, &req).await?;
    tracing::info!(machine = %req.name, id = machine_id, token = %auth.caller.name, "runner registered");
    Ok(Json(RegisterResponse {
        machine_id,
        protocol_version: PROTOCOL_VERSION,
        oldest_protocol_version: OLDEST_PROTOCOL_VERSION,
        state: machine_state,
    }))
}
