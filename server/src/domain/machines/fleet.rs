//! The fleet as an admin steers it: each machine with its state, the jobs
//! in hand, the work waiting that only it may run, when it was last heard
//! from and its noise floors. Gathered once here for `GET /api/v1/machines`,
//! the answer to an admin's state change and the machines pages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use patchperf_common::comparison::ComparisonKind;
use patchperf_common::machine_state::MachineState;
use patchperf_common::run::{MeasurementMode, TaskMode};
use serde::Serialize;

use crate::db::comparisons::{ComparisonSummary, ListFilter};
use crate::db::jobs::MachineJob;
use crate::db::machines::{HeldJob, MachineRow};
use crate::domain::comparison::listing;
use crate::domain::{Context, report};
use crate::{Error, db};

/// A machine as the fleet's list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FleetMachine {
    /// What it is and what an admin said (`state`, `state_note`,
    /// `state_changed_at`).
    #[serde(flatten)]
    pub machine: MachineRow,
    /// The last by id of the jobs it holds, if any.
    pub job: Option<HeldJob>,
    /// Every job it holds, by id: an agent with `--parallel N` on a
    /// tcg-icount machine holds jobs of several comparisons at once.
    pub jobs: Vec<HeldJob>,
    /// Queued jobs that only this machine may run (their comparison names
    /// it); work any machine may take is the list's `queued_any`.
    pub queued: i64,
    /// Draining and holding no job: safe to stop or upgrade.
    pub drained: bool,
    /// Seconds since it last called the server (a claim, a heartbeat, an
    /// upload): its last sign of life.
    pub heard_seconds_ago: f64,
    /// Its noise floor for each kind of run its A/A comparisons measured.
    pub noise_floors: Vec<FloorEntry>,
}

/// A machine's noise floor for one kind of run.
#[derive(Debug, Clone, Serialize)]
pub struct FloorEntry {
    /// The workload.
    pub workload: String,
    /// `process` or `thread`.
    pub mode: TaskMode,
    /// Tasks.
    pub nr_task: u32,
    /// `tcg-icount`, `kvm`, …
    pub measurement: MeasurementMode,
    /// Largest A/A change the interval allows, in percent.
    pub percent: f64,
    /// The A/A comparison that measured it.
    pub aa_comparison: i64,
    /// When that comparison finished.
    pub measured_at: DateTime<Utc>,
}

/// The fleet: machines by name, and what waits for any of them.
#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    /// By name; retired ones only when asked for.
    pub machines: Vec<FleetMachine>,
    /// Queued jobs any machine may take.
    pub queued_any: i64,
}

/// The fleet, retired machines only when `retired`.
pub async fn fleet(ctx: &Context, retired: bool) -> Result<Fleet, Error> {
    let rows = db::machines::list(&ctx.db, retired).await?;
    let mut held: HashMap<i64, Vec<HeldJob>> = HashMap::new();
    for job in db::machines::held_jobs(&ctx.db, None).await? {
        held.entry(job.machine_id).or_default().push(job);
    }
    let queued: HashMap<i64, i64> = db::machines::queue_depths(&ctx.db)
        .await?
        .into_iter()
        .collect();
    let mut machines = Vec::with_capacity(rows.len());
    for m in rows {
        let jobs = held.remove(&m.id).unwrap_or_default();
        let depth = queued.get(&m.id).copied().unwrap_or(0);
        machines.push(gather(ctx, m, jobs, depth).await?);
    }
    Ok(Fleet {
        machines,
        queued_any: queued.get(&0).copied().unwrap_or(0),
    })
}

/// Machine `name` as the fleet's list shows it, whatever its state.
pub async fn fleet_machine(ctx: &Context, name: &str) -> Result<FleetMachine, Error> {
    let m = db::machines::find_by_name(&ctx.db, name)
        .await?
        .ok_or_else(|| unknown(name))?;
    let jobs = db::machines::held_jobs(&ctx.db, Some(m.id)).await?;
    let depth = db::machines::queue_depths(&ctx.db)
        .await?
        .into_iter()
        .find_map(|(id, n)| (id == m.id).then_some(n))
        .unwrap_or(0);
    gather(ctx, m, jobs, depth).await
}

async fn gather(
    ctx: &Context,
    m: MachineRow,
    jobs: Vec<HeldJob>,
    queued: i64,
) -> Result<FleetMachine, Error> {
    let now = Utc::now();
    let mut noise_floors: Vec<FloorEntry> =
        report::noise_floors(ctx, m.id, now, Some(&m.inventory_json()))
            .await?
            .iter()
            .map(|((workload, mode, nr_task, measurement), f)| FloorEntry {
                workload: workload.clone(),
                mode: *mode,
                nr_task: *nr_task,
                measurement: *measurement,
                percent: f.percent,
                aa_comparison: f.aa_comparison,
                measured_at: f.measured_at,
            })
            .collect();
    noise_floors.sort_by(|a, b| {
        let key = |f: &FloorEntry| {
            (
                f.workload.clone(),
                f.mode.as_str(),
                f.nr_task,
                f.measurement.as_str(),
            )
        };
        key(a).cmp(&key(b))
    });
    let heard = (now - m.last_seen).num_milliseconds().max(0) as f64 / 1000.0;
    Ok(FleetMachine {
        drained: m.state == MachineState::Draining && jobs.is_empty(),
        heard_seconds_ago: heard,
        job: jobs.last().cloned(),
        jobs,
        queued,
        noise_floors,
        machine: m,
    })
}

/// The 404 of a machine name nobody registered.
pub(super) fn unknown(name: &str) -> Error {
    Error::NotFound(format!(
        "no machine named `{name}`; GET /api/v1/machines?retired=true lists them all"
    ))
}

/// What a machine's page shows beside its fleet entry: its latest jobs and
/// comparisons, and its newest A/A comparison.
#[derive(Debug)]
pub struct MachineHistory {
    pub fleet: FleetMachine,
    /// Newest first, at most the `jobs` asked for.
    pub jobs: Vec<MachineJob>,
    /// Its A/B comparisons, newest first, at most the `comparisons` asked
    /// for.
    pub comparisons: Vec<ComparisonSummary>,
    /// Its A/A calibrations, listed apart, newest first, as many.
    pub calibrations: Vec<ComparisonSummary>,
    /// Its newest finished A/A comparison.
    pub latest_aa: Option<i64>,
}

/// Machine `name`'s page: its fleet entry, its last `jobs` jobs, and its
/// last `comparisons` comparisons and as many calibrations.
pub async fn history(
    ctx: &Context,
    name: &str,
    jobs: i64,
    comparisons: i64,
) -> Result<MachineHistory, Error> {
    let fleet = fleet_machine(ctx, name).await?;
    let id = fleet.machine.id;
    let of_kind = |kind| ListFilter {
        machine: Some(name),
        kind: Some(kind),
        limit: comparisons,
        ..ListFilter::default()
    };
    Ok(MachineHistory {
        jobs: db::jobs::of_machine(&ctx.db, id, jobs).await?,
        comparisons: listing::list(ctx, &of_kind(ComparisonKind::Ab)).await?,
        calibrations: listing::list(ctx, &of_kind(ComparisonKind::Aa)).await?,
        latest_aa: db::comparisons::latest_aa(&ctx.db, id).await?,
        fleet,
    })
}
