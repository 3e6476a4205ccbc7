//! Runner machines: `POST /api/v1/runner/register`, by which a runner
//! creates or updates its machine, and `GET /api/v1/machines`, the
//! registered ones and their inventory, so CI can pick one to pin a
//! comparison to.

use axum::extract::State;
use patchperf_common::protocol::{ErrorBody, RegisterRequest, RegisterResponse};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::db::{self, machines::MachineRow};
use crate::domain::machines;
use crate::error::Result;
use crate::http::auth::RunnerAuth;
use crate::http::extract::Json;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(list))
}

/// `GET /api/v1/machines` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineList {
    /// By name: id, name, inventory, when registered and last seen.
    #[schema(value_type = Vec<Object>)]
    pub machines: Vec<MachineRow>,
}

/// Registered machines and their inventory.
#[utoipa::path(
    get,
    path = "/api/v1/machines",
    responses((status = 200, description = "Machines by name.", body = MachineList))
)]
async fn list(State(state): State<AppState>) -> Result<Json<MachineList>> {
    Ok(Json(MachineList {
        machines: db::machines::list(&state.db).await?,
    }))
}

/// Create or update this runner's machine (by name).
///
/// Requires a runner token (or an admin token). A machine belongs to the
/// token that registered it first; another runner token registering the
/// name gets 409 until an admin revokes the owner (or an admin token takes
/// the machine over by registering it).
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
        (status = 422, description = "Invalid name or inventory.", body = ErrorBody),
    )
)]
async fn register(
    State(state): State<AppState>,
    auth: RunnerAuth,
    Json(req): Json<RegisterRequest>,
) -> Result<Json<RegisterResponse>> {
    let machine_id = machines::register(&state, &auth.caller, &req).await?;
    tracing::info!(machine = %req.name, id = machine_id, token = %auth.caller.name, "runner registered");
    Ok(Json(RegisterResponse { machine_id }))
}
