//! The rules about runner machines that do not depend on how they are
//! asked: registering one (a machine belongs to the token that registered
//! it, and only that token or an admin acts for it and its leased jobs),
//! and a machine named in a request, which must be registered and able to
//! measure as asked.

use patchperf_common::protocol::RegisterRequest;
use patchperf_common::run::MeasurementMode;
use sqlx::{PgConnection, PgExecutor};

use crate::db::machines::MachineRow;
use crate::domain::Context;
use crate::domain::tokens::{Caller, TokenKind};
use crate::{Error, db};

/// Creates or updates `caller`'s machine as `req` describes it; its id. A
/// machine belongs to the token that registered it first; another runner
/// token registering the name is refused until an admin revokes the owner
/// (or an admin token takes the machine over by registering it).
pub async fn register(ctx: &Context, caller: &Caller, req: &RegisterRequest) -> Result<i64, Error> {
    validate_machine_name(&req.name)?;
    if req.inventory.nr_cpu == 0 {
        return Err(Error::Invalid("inventory.nr_cpu must be at least 1".into()));
    }
    let mut tx = ctx.db.begin().await?;
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
    Ok(machine_id)
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
fn validate_machine_name(name: &str) -> Result<(), Error> {
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
pub fn check_machine_owner(caller: &Caller, machine: &MachineRow) -> Result<(), Error> {
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
pub async fn machine_for(ctx: &Context, caller: &Caller, id: i64) -> Result<MachineRow, Error> {
    let machine = db::machines::find(&ctx.db, id).await?.ok_or_else(|| {
        Error::NotFound(format!(
            "machine {id} is not registered; POST /api/v1/runner/register first"
        ))
    })?;
    check_machine_owner(caller, &machine)?;
    Ok(machine)
}

/// The registered machine `name`, which must offer `backend` when one is
/// asked for.
pub async fn named(
    db: impl PgExecutor<'_>,
    name: &str,
    backend: Option<MeasurementMode>,
) -> Result<MachineRow, Error> {
    let machine = db::machines::find_by_name(db, name).await?.ok_or_else(|| {
        Error::Invalid(format!(
            "unknown machine `{name}`; GET /api/v1/machines lists the registered ones"
        ))
    })?;
    if let Some(backend) = backend {
        if !machine.backends.iter().any(|b| b == backend.as_str()) {
            return Err(Error::Invalid(format!(
                "machine `{name}` cannot measure with {} (it offers {})",
                backend.as_str(),
                machine.backends.join(", ")
            )));
        }
    }
    Ok(machine)
}
