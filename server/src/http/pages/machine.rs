//! `/machines` and `/machines/{name}`: the fleet (each machine's admin
//! state, jobs in hand, queue, last sign of life and noise floor; retired
//! machines with `?retired=true`), what each runner machine is, the noise
//! floors its A/A comparisons measured and the δ they give its reports
//! (the smallest change called real), its recent comparisons with their
//! verdicts (a failed one's failure), its calibrations apart with the
//! noise floors they measured, and the jobs it ran lately.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::protocol::FailureReason;
use patchperf_common::run::MeasurementMode;
use patchperf_common::stats::calibration;

use super::view;
use crate::AppState;
use crate::domain::comparison::listing::ComparisonSummary;
use crate::domain::machines::{self, FleetMachine, MachineHistory};
use crate::error::Result;
use crate::http::extract::{Path, Query};

/// How many jobs a machine page lists.
const RECENT_JOBS: i64 = 50;

/// A machine as the pages show it.
#[derive(Debug)]
pub struct MachineView {
    name: String,
    hostname: String,
    cpu_model: String,
    nr_cpu: i32,
    arch: String,
    memory: String,
    kernel_release: String,
    backends: String,
    kvm: &'static str,
    pmu: &'static str,
    notes: Vec<String>,
    registered: String,
    last_seen: String,
    /// `active`, `draining`, `drained`, `paused`, `retired`.
    state: &'static str,
    /// What the state means, and the admin's note.
    state_why: String,
    /// `12 s ago`: on the fleet's list only, so that a machine's own page
    /// reads the same at any time (a restored backup is checked so).
    heard: String,
    /// The jobs in hand: (id, comparison, what it does) each.
    jobs: Vec<(i64, i64, String)>,
    /// Queued jobs only this machine may run.
    queued: i64,
    /// `±0.10–0.40% (3 kinds of run)`, or empty without a floor.
    floor: String,
    protocol_version: i32,
    /// `fast, x86`: the pools it is in.
    pools: String,
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

impl From<&FleetMachine> for MachineView {
    fn from(f: &FleetMachine) -> Self {
        let m = &f.machine;
        let state = if f.drained {
            "drained"
        } else {
            m.state.as_str()
        };
        let state_why = match (m.state.explain(), m.state_note.as_str()) {
            ("", note) => note.to_string(),
            (why, "") => why.to_string(),
            (why, note) => format!("{why}; the admin's note: {note}"),
        };
        MachineView {
            memory: view::memory(m.memory_bytes),
            backends: m.backends.join(", "),
            kvm: yes_no(m.kvm_usable),
            pmu: yes_no(m.pmu_usable),
            registered: view::time(m.registered_at),
            last_seen: view::time(m.last_seen),
            name: m.name.clone(),
            hostname: m.hostname.clone(),
            cpu_model: m.cpu_model.clone(),
            nr_cpu: m.nr_cpu,
            arch: m.arch.clone(),
            kernel_release: m.kernel_release.clone(),
            notes: m.notes.clone(),
            state,
            state_why,
            heard: ago(f.heard_seconds_ago),
            jobs: f
                .jobs
                .iter()
                .map(|j| {
                    let doing = if j.message.is_empty() {
                        j.state.clone()
                    } else {
                        format!("{}: {}", j.state, j.message)
                    };
                    (j.id, j.comparison_id, doing)
                })
                .collect(),
            queued: f.queued,
            floor: floor_range(f),
            protocol_version: m.protocol_version,
            pools: m.labels.join(", "),
        }
    }
}

/// `45 s ago`, `12 min ago`, `3 h ago`, `2 d ago`.
fn ago(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..120 => format!("{s} s ago"),
        120..7200 => format!("{} min ago", s / 60),
        7200..172_800 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// The span of a machine's noise floors, for the fleet's list.
fn floor_range(f: &FleetMachine) -> String {
    let percents = f.noise_floors.iter().map(|n| n.percent);
    let (Some(lo), Some(hi)) = (percents.clone().reduce(f64::min), percents.reduce(f64::max))
    else {
        return String::new();
    };
    let kinds = match f.noise_floors.len() {
        1 => "1 kind of run".to_string(),
        n => format!("{n} kinds of run"),
    };
    if (hi - lo).abs() < 0.005 {
        format!("±{lo:.2}% ({kinds})")
    } else {
        format!("±{lo:.2}–{hi:.2}% ({kinds})")
    }
}

/// A job in the machine's history.
#[derive(Debug)]
pub struct JobLine {
    id: i64,
    comparison_id: i64,
    state: &'static str,
    message: String,
    failure: &'static str,
    updated: String,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "machines.html")]
pub(super) struct MachinesPage {
    machines: Vec<MachineView>,
    /// Queued jobs any machine may take.
    queued_any: i64,
    /// Retired machines are listed.
    retired: bool,
}

/// `/machines` query.
#[derive(Debug, serde::Deserialize)]
pub(super) struct MachinesQuery {
    /// List retired machines too.
    #[serde(default)]
    retired: bool,
}

/// How many comparisons a machine page lists.
const RECENT_COMPARISONS: i64 = 20;

/// The noise floor of one kind of run.
#[derive(Debug)]
pub struct FloorLine {
    workload: String,
    mode: &'static str,
    nr_task: u32,
    measurement: &'static str,
    percent: String,
    /// δ a comparison of this kind judged now gets.
    delta: String,
    aa: i64,
    measured: String,
}

/// A comparison or calibration the machine ran, said as the dashboard
/// says it ([`super::dashboard::shown`]): its name, its verdict (or
/// `calibration`, or `failed`) and its first answer (the headline, the
/// noise floor, why it failed).
#[derive(Debug)]
pub struct ComparisonLine {
    id: i64,
    name: String,
    verdict: String,
    verdict_class: String,
    headline: String,
    created: String,
}

impl From<ComparisonSummary> for ComparisonLine {
    fn from(c: ComparisonSummary) -> Self {
        let (verdict, verdict_class, _, headline) = super::dashboard::shown(&c, None);
        ComparisonLine {
            id: c.id,
            name: c.name,
            verdict,
            verdict_class,
            headline,
            created: view::time(c.created_at),
        }
    }
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "machine.html")]
pub(super) struct MachinePage {
    m: MachineView,
    /// The machine's newest finished A/A comparison.
    aa: Option<i64>,
    /// The floors that speak for the machine as it is now.
    floors: Vec<FloorLine>,
    max_age_days: u64,
    /// K of δ = max(floor of the mode, K × floor).
    multiple: f64,
    /// `tcg-icount 0.1%, kvm 1%, …`.
    mode_floors: String,
    mode_defaults: String,
    comparisons: Vec<ComparisonLine>,
    /// Its A/A calibrations, apart from what it compared.
    calibrations: Vec<ComparisonLine>,
    jobs: Vec<JobLine>,
}

pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<MachinesQuery>,
) -> Result<MachinesPage> {
    let fleet = machines::fleet(&state, q.retired).await?;
    Ok(MachinesPage {
        machines: fleet.machines.iter().map(MachineView::from).collect(),
        queued_any: fleet.queued_any,
        retired: q.retired,
    })
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<MachinePage> {
    let MachineHistory {
        fleet,
        jobs,
        comparisons,
        calibrations,
        latest_aa: aa,
    } = machines::history(&state, &name, RECENT_JOBS, RECENT_COMPARISONS).await?;
    let _m = &fleet.machine;
    let jobs = jobs
        .into_iter()
        .map(|j| JobLine {
            id: j.id,
            comparison_id: j.comparison_id,
            state: j.state.as_str(),
            message: j.message,
            failure: j.failure_reason.map_or("", FailureReason::code),
            updated: view::time(j.updated_at),
        })
        .collect();
    let floors: Vec<FloorLine> = fleet
        .noise_floors
        .iter()
        .map(|f| FloorLine {
            workload: f.workload.clone(),
            mode: f.mode.as_str(),
            nr_task: f.nr_task,
            measurement: f.measurement.as_str(),
            percent: calibration::floor_text(f.percent),
            delta: calibration::calibrated_percent(f.measurement, f.percent)
                .map_or_else(String::new, |d| format!("{d:.2}%")),
            aa: f.aa_comparison,
            measured: view::time(f.measured_at),
        })
        .collect();
    let per_mode = |f: fn(MeasurementMode) -> f64| {
        MeasurementMode::ALL
            .iter()
            .map(|&mode| format!("{} {}%", mode.as_str(), f(mode)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(MachinePage {
        m: MachineView::from(&fleet),
        aa,
        floors,
        max_age_days: state.config.calibration_max_age.as_secs() / 86_400,
        multiple: calibration::NOISE_MULTIPLE,
        mode_floors: per_mode(calibration::floor_percent),
        mode_defaults: per_mode(calibration::uncalibrated_percent),
        comparisons: comparisons.into_iter().map(ComparisonLine::from).collect(),
        calibrations: calibrations.into_iter().map(ComparisonLine::from).collect(),
        jobs,
    })
}
