//! The rules about runner machines that do not depend on how they are
//! asked: registering one (a machine belongs to the token that registered
//! it, and only that token or an admin acts for it and its leased jobs;
//! runner and server must speak a common protocol version), an admin
//! steering one (drain, pause, resume, retire: its
//! [`MachineState`], which `domain::jobs::queue` obeys at every claim) and
//! labelling it into pools, the fleet as the machine list shows it, and a
//! machine or pool named in a request, which must be registered, not
//! retired and able to measure as asked.

use patchperf_common::machine_state::{self, MAX_LABELS, MachineState};
use patchperf_common::protocol::{self, RegisterRequest};
use patchperf_common::run::MeasurementMode;
use sqlx::{PgConnection, PgExecutor};

use crate::db::machines::MachineRow;
use crate::domain::Context;
use crate::domain::jobs::lifecycle;
use crate::domain::tokens::{Caller, TokenKind};
use crate::{Error, db};

pub use fleet::{Fleet, FleetMachine, FloorEntry, MachineHistory, fleet, fleet_machine, history};

mod fleet;

/// The longest note an admin may give with a state change.
pub const MAX_STATE_NOTE: usize = 200;

/// Creates or updates `caller`'s machine as `req` describes it; its id and
/// state. A machine belongs to the token that registered it first; another
/// runner token registering the name is refused until an admin revokes the
/// owner (or an admin token takes the machine over by registering it). A
/// runner speaking a protocol version this server does not is refused,
/// naming both versions; a retired machine registers (its inventory is
/// kept up to date) but stays retired.
pub async fn register(
    ctx: &Context,
    caller: &Caller,
    req: &RegisterRequest,
) -> Result<(i64, MachineState), Error> {
    check_protocol(req.protocol_version)?;
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
        req.protocol_version,
    )
    .await?
    else {
        return Err(taken(&mut tx, &req.name).await);
    };
    let state = db::machines::claim_state(&mut tx, machine_id)
        .await?
        .unwrap_or_default();
    tx.commit().await?;
    Ok((machine_id, state))
}

/// Fails unless this server speaks the runner's protocol `version`, with
/// a message naming both versions and what to upgrade.
pub fn check_protocol(version: u32) -> Result<(), Error> {
    match protocol::runner_refused(version) {
        Some(why) => Err(Error::Invalid(why)),
        None => Ok(()),
    }
}

/// Sets machine `name`'s state as an admin asks, with `note` saying why
/// (shown on the pages); the machine as the list shows it afterwards.
/// Draining or pausing never touches a job in hand: it finishes. Retiring
/// a machine that holds a job is refused (drain it first), so a retired
/// machine never has work in flight; the comparisons whose boots must come
/// from it and are not finished are cancelled, saying so, since no other
/// machine may finish them (nothing waits for good on a machine that is
/// gone). Resuming (back to active) wakes the claims waiting on every
/// server.
pub async fn set_state(
    ctx: &Context,
    name: &str,
    state: MachineState,
    note: &str,
) -> Result<FleetMachine, Error> {
    let note = note.trim();
    if note.chars().count() > MAX_STATE_NOTE || note.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "note must be one line of at most {MAX_STATE_NOTE} characters"
        )));
    }
    let mut tx = ctx.db.begin().await?;
    let id = db::machines::set_state(&mut tx, name, state, note)
        .await?
        .ok_or_else(|| fleet::unknown(name))?;
    if state == MachineState::Retired {
        if let Some(job) = db::machines::held_jobs(&mut *tx, Some(id)).await?.first() {
            return Err(Error::WrongState(format!(
                "machine `{name}` holds job {} ({}); drain it (POST \
                 /api/v1/machines/{name}/drain) and retire it once that job has finished \
                 or its lease has run out",
                job.id, job.state
            )));
        }
        let by = format!("the retirement of machine {name}, which its boots must come from");
        for comparison in db::comparisons::unfinished_on(&mut tx, id).await? {
            lifecycle::cancel(&mut tx, comparison, &by).await?;
            tracing::info!(comparison, machine = %name, "comparison cancelled: its machine retired");
        }
    }
    if state.claims() {
        db::notify_jobs_changed(&mut tx).await?;
    }
    tx.commit().await?;
    fleet_machine(ctx, name).await
}

/// Sets machine `name`'s labels, the pools it is in (each a plain word,
/// at most [`MAX_LABELS`], kept sorted and once each); the machine as the
/// list shows it afterwards. A comparison already claimed by the machine
/// stays its own whatever the labels become.
pub async fn set_labels(
    ctx: &Context,
    name: &str,
    labels: &[String],
) -> Result<FleetMachine, Error> {
    if labels.len() > MAX_LABELS {
        return Err(Error::Invalid(format!(
            "labels: {} given, a machine carries at most {MAX_LABELS}",
            labels.len()
        )));
    }
    for label in labels {
        machine_state::check_label(label)
            .map_err(|why| Error::Invalid(format!("labels: {why}")))?;
    }
    let mut labels = labels.to_vec();
    labels.sort();
    labels.dedup();
    let mut tx = ctx.db.begin().await?;
    db::machines::set_labels(&mut *tx, name, &labels)
        .await?
        .ok_or_else(|| fleet::unknown(name))?;
    // A machine new to a pool may take what waits there.
    db::notify_jobs_changed(&mut tx).await?;
    tx.commit().await?;
    fleet_machine(ctx, name).await
}

/// Fails unless pool `label` has a machine that is not retired (and that
/// offers `backend` when one is asked for), so a comparison asking for it
/// does not wait for ever.
pub async fn check_pool(
    db: impl PgExecutor<'_>,
    label: &str,
    backend: Option<MeasurementMode>,
) -> Result<(), Error> {
    let members = db::machines::in_pool(db, label).await?;
    if members.is_empty() {
        return Err(Error::Invalid(format!(
            "no machine is in pool `{label}`; an admin labels machines with PUT \
             /api/v1/machines/{{name}}/labels (GET /api/v1/machines shows each one's labels)"
        )));
    }
    if let Some(backend) = backend {
        if !members
            .iter()
            .any(|(_, backends)| backends.iter().any(|b| b == backend.as_str()))
        {
            let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
            return Err(Error::Invalid(format!(
                "no machine of pool `{label}` ({}) can measure with {}",
                names.join(", "),
                backend.as_str()
            )));
        }
    }
    Ok(())
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

/// The names of every machine that ever registered, retired ones too:
/// their comparisons stay to be found.
pub async fn names(ctx: &Context) -> Result<Vec<String>, Error> {
    Ok(db::machines::list(&ctx.db, true)
        .await?
        .into_iter()
        .map(|m| m.name)
        .collect())
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

/// The mode a comparison that names `backend` or none measures in on
/// `machine`: the one named, else the machine's best (the first it offers,
/// the one its runner picks); unknown while neither is.
pub fn measures_in(machine: Option<&MachineRow>, backend: Option<&str>) -> Option<MeasurementMode> {
    backend
        .or_else(|| machine.and_then(|m| m.backends.first()).map(String::as_str))
        .and_then(MeasurementMode::parse)
}

/// The registered machine `name`, which must not be retired and must offer
/// `backend` when one is asked for. (A draining or paused one may be named:
/// its work waits until it is resumed.)
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
    if machine.state == MachineState::Retired {
        return Err(Error::Invalid(format!(
            "machine `{name}` is retired and runs nothing; name another (GET \
             /api/v1/machines lists them), or an admin resumes it (POST \
             /api/v1/machines/{name}/resume)"
        )));
    }
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
