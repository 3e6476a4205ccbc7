//! `POST /api/v1/runner/register`: a runner creates or updates its machine,
//! and the rule every runner call keeps: a machine belongs to one token,
//! and only that token (or an admin) acts for it and its leased jobs.

use axum::extract::State;
use patchperf_common::protocol::{ErrorBody, RegisterRequest, RegisterResponse};
use sqlx::PgConnection;
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
    validate_machine_name(&req.name)?;
    if req.inventory.nr_cpu == 0 {
        return Err(Error::Invalid("inventory.nr_cpu must be at least 1".into()));
    }
    let caller = &auth.caller;
    let mut tx = state.db.begin().await?;
    let take_over = caller.kind == TokenKind::Admin;
    let Some(machine_id) = db::machines::upsert(
        &mut tx,
        &req.name,
        caller.token_id,
        take_over,
        &req.inventory,
    )
    .await?
    else {
        return Err(taken(&mut tx, &req.name).await);
    };
    tx.commit().await?;
    tracing::info!(machine = %req.name, id = machine_id, token = %auth.caller.name, "runner registered");
    Ok(Json(RegisterResponse { machine_id }))
}

/// The 409 for registering a machine another live token owns: who owns it
/// and how an admin frees it.
async fn taken(conn: &mut PgConnection, name: &str) -> Error {
    match db::machines::owner(&mut *conn, name).await {
        Ok(Some(owner)) => Error::WrongState(format!(
            "machine `{name}` is registered under {} token `{}` (id {id}); another token \
             cannot register it. An admin frees it by revoking that token (`patchperf-server \
             token revoke {id}` or POST /api/v1/tokens/{id}/revoke), or takes it over by \
             registering it with an admin token",
            owner.kind,
            owner.name,
            id = owner.token_id
        )),
        Ok(None) => Error::WrongState(format!(
            "machine `{name}` changed while registering; register again"
        )),
        Err(e) => e.into(),
    }
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
        Err(Error::Invalid(format!(
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
            "machine `{}` is registered under another token; token `{}` may not act for it \
             or its jobs",
            machine.name, caller.name
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
