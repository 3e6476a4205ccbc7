//! `POST /api/v1/runner/register`: a runner creates or updates its machine.

use axum::extract::State;
use patchperf_common::protocol::{ErrorBody, RegisterRequest, RegisterResponse};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::{self, machines::MachineRow};
use crate::error::Result;
use crate::http::auth::{Caller, RunnerAuth, TokenKind};
use crate::http::extract::Json;
use crate::{AppState, Error};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(register))
}

/// Create or update this runner's machine (by name).
///
/// Requires a runner token (or an admin token).
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
    validate_machine_name(&req.name)?;
    if req.inventory.nr_cpu == 0 {
        return Err(Error::Unprocessable(
            "inventory.nr_cpu must be at least 1".into(),
        ));
    }
    let mut tx = state.db.begin().await?;
    let machine_id =
        db::machines::upsert(&mut tx, &req.name, auth.caller.token_id, &req.inventory).await?;
    tx.commit().await?;
    tracing::info!(machine = %req.name, id = machine_id, token = %auth.caller.name, "runner registered");
    Ok(Json(RegisterResponse { machine_id }))
}

/// Machine names appear in URLs, filters and report headers: keep them
/// plain.
fn validate_machine_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::Unprocessable(format!(
            "machine name {name:?} must be 1–64 characters of A–Z, a–z, 0–9, '-', '_', '.'"
        )))
    }
}

/// Fails unless `caller` may act for `machine`: the token that registered
/// it, or an admin.
pub fn check_machine_owner(caller: &Caller, machine: &MachineRow) -> Result<()> {
    if caller.kind == TokenKind::Admin || caller.token_id == machine.token_id {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "machine `{}` is registered under another token; register it again with this \
             token first",
            machine.name
        )))
    }
}

/// The registered machine `id` that `caller` may act for.
pub async fn machine_for(state: &AppState, caller: &Caller, id: i64) -> Result<MachineRow> {
    let machine = db::machines::find(&state.db, id).await?.ok_or_else(|| {
        Error::NotFound(format!(
            "machine {id} is not registered; POST /api/v1/runner/register first"
        ))
    })?;
    check_machine_owner(caller, &machine)?;
    Ok(machine)
}
