//! Automatic calibration: a machine about to run an A/B comparison gets an
//! A/A comparison first for the kinds of run (measurement mode, workload,
//! mode, nr_task) that no A/A on it measures yet, so that the A/B report
//! judges with the δ the machine can resolve
//! ([`report::calibration`](crate::domain::calibration)) rather
//! than the mode's default. When the A/A that measured a kind is too old or
//! was measured before the machine changed, a new one is queued behind the
//! machine's other work: the A/B is judged with the default meanwhile and
//! again when the new A/A finishes (an A/A finishing marks its machine's
//! reports stale).
//!
//! The A/A boots the A/B's own pristine base kernel (built over the same
//! commit for a tracked tree's anchor), which the runner has cached, with
//! the A/B's parameters and 3 boots a side, the fewest a verdict uses.

use std::collections::BTreeSet;

use patchperf_common::api::Setup;
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::protocol::NrTask;
use patchperf_common::run::MeasurementMode;
use sqlx::PgConnection;

use crate::db::comparisons::{AaOfMachine, ComparisonRow};
use crate::db::machines::MachineRow;
use crate::domain::calibration::{AAS_LOOKED_AT, same_machine};
use crate::domain::comparison::{self, Carried, Order, Origin};
use crate::domain::machines;
use crate::{Config, Error, db};

/// Boots a side of a calibration A/A comparison.
const RUNS: u32 = 3;

/// A kind of run as a comparison asks for it: (measurement mode, workload,
/// nr_task as asked); the task mode is the comparison's.
type Asked = (String, String, NrTask);

/// What the machine's A/A comparisons say of one kind of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measured {
    /// An A/A that speaks for the machine now measured it, or one is
    /// queued or running.
    Yes,
    /// Only A/As too old or of the machine before it changed did.
    Stale,
    /// None did.
    Never,
}

/// Queues the A/A comparison that `machine` needs before it runs a job of
/// comparison `comparison_id`, when it needs one; returns its id.
pub async fn before_claim(
    conn: &mut PgConnection,
    machine: &MachineRow,
    comparison_id: i64,
    config: &Config,
) -> Result<Option<i64>, Error> {
    db::machines::lock_calibration(&mut *conn, machine.id).await?;
    let Some(c) = db::comparisons::find(&mut *conn, comparison_id).await? else {
        return Ok(None);
    };
    // One try per comparison: an A/A that failed (a kernel that does not
    // boot fails the A/B too) must not be queued again at every claim.
    if c.kind != ComparisonKind::Ab || db::comparisons::has_calibration(&mut *conn, c.id).await? {
        return Ok(None);
    }
    // The mode the runner will measure in: the one asked for, else the
    // machine's best.
    let Some(measurement) =
        machines::measures_in(Some(machine), c.asked.backend.map(MeasurementMode::as_str))
            .map(|m| m.as_str().to_string())
    else {
        return Ok(None);
    };
    let aas = db::comparisons::aas_of_machine(&mut *conn, machine.id, AAS_LOOKED_AT).await?;
    let inventory = machine.inventory_json();
    let oldest = chrono::Utc::now()
        - chrono::Duration::from_std(config.calibration_max_age).unwrap_or(chrono::Duration::MAX);
    let mut missing = BTreeSet::new();
    let mut never = false;
    for workload in &c.asked.workloads {
        for nr_task in &c.params.nr_task {
            let kind = (measurement.clone(), workload.clone(), *nr_task);
            match measured(&aas, &c, &kind, machine, &inventory, oldest) {
                Measured::Yes => {}
                Measured::Stale => {
                    missing.insert(workload.clone());
                }
                Measured::Never => {
                    missing.insert(workload.clone());
                    never = true;
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(None);
    }
    let workloads: Vec<String> = c
        .asked
        .workloads
        .iter()
        .filter(|w| missing.contains(*w))
        .cloned()
        .collect();
    let id = queue(conn, &c, machine, &measurement, &workloads, config).await?;
    db::comparisons::mark_calibration(conn, id, c.id, if never { 1 } else { -1 }).await?;
    // A comparison free to run anywhere runs where it was calibrated: else
    // another machine could claim it while this one runs the A/A, and run
    // it uncalibrated (one calibration per comparison).
    db::comparisons::pin(conn, c.id, machine.id, inventory, false).await?;
    tracing::info!(
        machine = %machine.name,
        aa = id,
        calibrates = c.id,
        first = never,
        "queued a calibration A/A comparison"
    );
    Ok(Some(id))
}

/// What `aas` (newest first) say of kind `kind` of comparison `c` on
/// `machine` as `inventory` describes it now.
fn measured(
    aas: &[AaOfMachine],
    c: &ComparisonRow,
    (measurement, workload, nr_task): &Asked,
    machine: &MachineRow,
    inventory: &serde_json::Value,
    oldest: chrono::DateTime<chrono::Utc>,
) -> Measured {
    let mut seen = false;
    for aa in aas {
        let mode = aa.backend.as_ref().or(machine.backends.first());
        if mode != Some(measurement)
            || !aa.workloads.contains(workload)
            || aa.params.mode != c.params.mode
            || !aa.params.nr_task.contains(nr_task)
        {
            continue;
        }
        let current = match aa.status {
            ComparisonStatus::Queued | ComparisonStatus::Running => true,
            _ => {
                aa.finished_at.is_some_and(|t| t >= oldest)
                    && same_machine(aa.machine_inventory.as_ref(), Some(inventory))
            }
        };
        if current {
            return Measured::Yes;
        }
        seen = true;
    }
    if seen {
        Measured::Stale
    } else {
        Measured::Never
    }
}

/// Stores the A/A comparison of `workloads` for `c` on `machine`, with its
/// jobs queued.
async fn queue(
    conn: &mut PgConnection,
    c: &ComparisonRow,
    machine: &MachineRow,
    measurement: &str,
    workloads: &[String],
    config: &Config,
) -> Result<i64, Error> {
    let order = Order {
        origin: Origin::Calibration,
        kind: ComparisonKind::Aa,
        base: c.base.0.clone(),
        mbox: String::new(),
        per_patch: false,
        commits: Vec::new(),
        git_range: None,
        commit: None,
        // The comparison's kernels and parameters, on its machine.
        setup: Setup {
            workloads: workloads.to_vec(),
            runs: RUNS,
            max_runs: None,
            backend: MeasurementMode::parse(measurement),
            machine: Some(machine.name.clone()),
            pool: None,
            ..c.setup()
        },
        params: c.params.0.clone(),
        run_length_pending: false,
        machine: Some((machine.id, machine.inventory_json())),
        seed: rand::random(),
        submitted_by: db::comparisons::submitter(&mut *conn, c.id).await?,
        carried: c
            .built_over
            .clone()
            .zip(c.carried_series_id)
            .map(|(over, series_id)| Carried::Stored { over, series_id }),
    };
    comparison::queue(conn, &order, config.max_attempts).await
}
