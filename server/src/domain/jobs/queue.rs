//! The job queue as the protocol sees it: handing the next claimable job to
//! a machine with what it needs to run it. The state changes themselves
//! (creating jobs, the lease, taking back expired ones) are
//! [`crate::domain::jobs::lifecycle`]'s. Each function works inside the caller's
//! transaction. A machine an admin drained, paused or retired claims
//! nothing; its claim is told why.

use std::sync::Arc;

use patchperf_common::comparison::ComparisonKind;
use patchperf_common::digest::sha256_hex;
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{BaseSource, BootSlot, JobSpec};
use sqlx::PgConnection;
use sqlx::postgres::PgListener;

use crate::db::{self, jobs::JobRow, machines::MachineRow};
use crate::domain::context::workers::{Done, Worker};
use crate::domain::{Context, calibration::automatic, jobs::lifecycle, jobs::run_length};
use crate::{Config, Error};

/// What a claim comes back with.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// A job leased to the machine, with what the runner needs to run it.
    Job(Box<JobSpec>),
    /// Nothing for this machine now.
    Nothing,
    /// The machine may not claim: an admin set this state.
    Held(MachineState),
}

/// Leases the next claimable job to `machine` and returns what the runner
/// needs to execute it; nothing when there is nothing for this machine or
/// an admin holds it (its state is read afresh, under a lock an admin's
/// change waits for, so no job is leased after a drain was answered).
pub async fn claim(
    conn: &mut PgConnection,
    machine: &MachineRow,
    config: &Config,
) -> Result<Claim, Error> {
    lifecycle::expire_leases(conn).await?;
    let state = db::machines::claim_state(conn, machine.id)
        .await?
        .unwrap_or(machine.state);
    if !state.claims() {
        return Ok(Claim::Held(state));
    }
    let Some(mut next) =
        db::jobs::next_claimable(conn, machine.id, &machine.backends, &machine.labels).await?
    else {
        return Ok(Claim::Nothing);
    };
    // A length left to the mode is fixed before a calibration copies it.
    run_length::settle(conn, next.comparison_id, machine).await?;
    // A first calibration of the machine goes before the job it is for.
    if config.auto_calibrate
        && automatic::before_claim(conn, machine, next.comparison_id, config)
            .await?
            .is_some()
    {
        if let Some(first) =
            db::jobs::next_claimable(conn, machine.id, &machine.backends, &machine.labels).await?
        {
            next = first;
        }
    }
    let job = lifecycle::claim(conn, next.id, machine, config.lease.as_secs_f64()).await?;
    Ok(Claim::Job(Box::new(spec(conn, &job, config).await?)))
}

async fn spec(conn: &mut PgConnection, job: &JobRow, config: &Config) -> Result<JobSpec, Error> {
    let comparison = db::comparisons::find(&mut *conn, job.comparison_id)
        .await?
        .ok_or_else(|| Error::Internal(format!("job {} has no comparison", job.id)))?;
    let (mut mbox, mut patches_sha256) =
        db::patches::mbox(&mut *conn, comparison.series_id).await?;
    // A step of a per-patch comparison: the base kernel carries the
    // patches before the step's.
    let (mut base_mbox, mut base_patches_sha256) = match comparison.base_series_id {
        Some(id) => db::patches::mbox(&mut *conn, id).await?,
        None => (String::new(), String::new()),
    };
    let mut base = comparison.base.0;
    // Built over another commit (a tracked tree's anchor): both sides carry
    // the commits from there to the base first. The series are one message
    // per commit, so the carried series and a head's are together the
    // series the next head carries, and its base kernel is this patched
    // one, from the runner's cache.
    if let (Some(over), Some(carried)) = (&comparison.built_over, comparison.carried_series_id) {
        let BaseSource::Git { url, .. } = &base else {
            return Err(Error::Internal(format!(
                "comparison {} is built over a commit but its base is not git",
                comparison.id
            )));
        };
        let (carried, _) = db::patches::mbox(&mut *conn, carried).await?;
        base = BaseSource::Git {
            url: url.clone(),
            commit: over.clone(),
        };
        mbox = format!("{carried}{mbox}");
        patches_sha256 = sha256_hex(mbox.as_bytes());
        base_mbox = format!("{carried}{base_mbox}");
        base_patches_sha256 = sha256_hex(base_mbox.as_bytes());
    }
    let boots = db::boots::for_job(&mut *conn, job.id)
        .await?
        .into_iter()
        .map(|b| {
            Ok(BootSlot {
                seq: u32::try_from(b.seq)
                    .map_err(|_| Error::Internal("negative boot seq".into()))?,
                side: b.side,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let asked = comparison.asked.0;
    Ok(JobSpec {
        job_id: job.id,
        comparison_id: job.comparison_id,
        attempt: u32::try_from(job.attempt).unwrap_or(0),
        lease_seconds: lease_seconds(config),
        base,
        mbox,
        aa: comparison.kind == ComparisonKind::Aa,
        patches_sha256,
        base_mbox,
        base_patches_sha256,
        config_fragment: asked.config_fragment,
        workloads: job.workloads.clone().unwrap_or(asked.workloads),
        params: comparison.params.0,
        backend: asked.backend,
        boots,
    })
}

/// The lease length in whole seconds as told to runners (at least 1).
pub fn lease_seconds(config: &Config) -> u32 {
    u32::try_from(config.lease.as_secs())
        .unwrap_or(u32::MAX)
        .max(1)
}

/// How long one round of the `job-notifications` worker listens: its
/// rounds end, so `/healthz` shows it alive (`last_ok_at`) and a stale
/// one is seen.
const LISTEN_ROUND: std::time::Duration = std::time::Duration::from_secs(30);

/// Starts this server's `job-notifications` worker: it turns the database's
/// notifications of new work into wake-ups of the claims waiting here.
/// Each round listens for [`LISTEN_ROUND`] on the connection the last one
/// kept, counts what arrived, and the next starts at once; after the
/// connection fails, it connects again 5 s later.
pub fn spawn_listener(ctx: &Context) -> tokio::task::JoinHandle<()> {
    let kept: Arc<tokio::sync::Mutex<Option<PgListener>>> = Arc::default();
    Worker::every("job-notifications", std::time::Duration::from_secs(5)).spawn(ctx, move |ctx| {
        let kept = Arc::clone(&kept);
        async move {
            let mut kept = kept.lock().await;
            let listener = match kept.take() {
                Some(l) => kept.insert(l),
                None => kept.insert(db::listen::listen(&ctx.db).await?),
            };
            match db::listen::wake_for(listener, &ctx.jobs_changed, LISTEN_ROUND).await {
                Ok(n) => Ok(Done::More(n)),
                Err(e) => {
                    *kept = None;
                    Err(e.into())
                }
            }
        }
    })
}

/// Leases the next claimable job to `machine`, waiting up to `wait` (at
/// most `Config::claim_wait_max`) for one to appear; nothing when none did
/// or the server is shutting down. A held machine waits too (a resume
/// wakes it), so its runner does not ask again at once; it is told its
/// state when the wait ends still held.
pub async fn claim_within(
    ctx: &Context,
    machine: &MachineRow,
    wait: std::time::Duration,
) -> Result<Claim, Error> {
    db::machines::touch(&ctx.db, machine.id).await?;
    let deadline = tokio::time::Instant::now() + wait.min(ctx.config.claim_wait_max);
    let mut shutting_down = ctx.shutting_down.subscribe();
    loop {
        // Registered before looking, so a job submitted between the look
        // and the wait still wakes us.
        let woken = ctx.jobs_changed.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();

        let mut tx = ctx.db.begin().await?;
        let answer = claim(&mut tx, machine, &ctx.config).await?;
        tx.commit().await?;
        if let Claim::Job(spec) = &answer {
            tracing::info!(job = spec.job_id, attempt = spec.attempt, machine = %machine.name, "job claimed");
            return Ok(answer);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline || *shutting_down.borrow() {
            return Ok(answer);
        }
        let nap = (deadline - now).min(ctx.config.claim_poll);
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(nap) => {}
            _ = shutting_down.changed() => {}
        }
    }
}
