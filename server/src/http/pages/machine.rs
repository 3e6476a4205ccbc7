//! `/machines` and `/machines/{name}`: what each runner machine is, the
//! noise floors its A/A comparisons measured and the δ they give its
//! reports (the smallest change called real), its recent comparisons with
//! their verdicts and the jobs it ran lately.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::protocol::FailureReason;
use patchperf_common::run::MeasurementMode;
use patchperf_common::stats::calibration;

use super::view;
use crate::db::comparisons::ListFilter;
use crate::db::machines::MachineRow;
use crate::domain::report;
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error, db};

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
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

impl From<MachineRow> for MachineView {
    fn from(m: MachineRow) -> Self {
        MachineView {
            memory: view::memory(m.memory_bytes),
            backends: m.backends.join(", "),
            kvm: yes_no(m.kvm_usable),
            pmu: yes_no(m.pmu_usable),
            registered: view::time(m.registered_at),
            last_seen: view::time(m.last_seen),
            name: m.name,
            hostname: m.hostname,
            cpu_model: m.cpu_model,
            nr_cpu: m.nr_cpu,
            arch: m.arch,
            kernel_release: m.kernel_release,
            notes: m.notes,
        }
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

/// A comparison the machine ran.
#[derive(Debug)]
pub struct ComparisonLine {
    id: i64,
    subject: String,
    verdict: String,
    verdict_class: String,
    headline: String,
    created: String,
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
    jobs: Vec<JobLine>,
}

pub(super) async fn list(State(state): State<AppState>) -> Result<MachinesPage> {
    Ok(MachinesPage {
        machines: db::machines::list(&state.db)
            .await?
            .into_iter()
            .map(MachineView::from)
            .collect(),
    })
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<MachinePage> {
    let m = db::machines::find_by_name(&state.db, &name)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no machine named {name}")))?;
    let jobs = db::jobs::of_machine(&state.db, m.id, RECENT_JOBS)
        .await?
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
    let aa = db::comparisons::latest_aa(&state.db, m.id).await?;
    let mut floors: Vec<FloorLine> =
        report::noise_floors(&state, m.id, chrono::Utc::now(), Some(&m.inventory_json()))
            .await?
            .iter()
            .map(
                |((workload, mode, nr_task, measurement), floor)| FloorLine {
                    workload: workload.clone(),
                    mode: mode.as_str(),
                    nr_task: *nr_task,
                    measurement: measurement.as_str(),
                    percent: format!("±{:.2}%", floor.percent),
                    delta: calibration::calibrated_percent(*measurement, floor.percent)
                        .map_or_else(String::new, |d| format!("{d:.2}%")),
                    aa: floor.aa_comparison,
                    measured: view::time(floor.measured_at),
                },
            )
            .collect();
    floors.sort_by(|a, b| {
        (&a.workload, a.mode, a.nr_task, a.measurement).cmp(&(
            &b.workload,
            b.mode,
            b.nr_task,
            b.measurement,
        ))
    });
    let filter = ListFilter {
        status: None,
        machine: Some(&m.name),
        workload: None,
        verdict: None,
        limit: RECENT_COMPARISONS,
        ..ListFilter::default()
    };
    let comparisons = db::comparisons::list(&state.db, &filter)
        .await?
        .into_iter()
        .map(|c| {
            let (verdict, verdict_class) = match c.verdict {
                Some(v) => (v.as_str().to_string(), view::overall_class(v)),
                None => (c.status.as_str().to_string(), "pending".to_string()),
            };
            ComparisonLine {
                id: c.id,
                subject: c.subject.unwrap_or_else(|| "A/A (no patch)".into()),
                verdict,
                verdict_class,
                headline: c.headline.unwrap_or_default(),
                created: view::time(c.created_at),
            }
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
        m: m.into(),
        aa,
        floors,
        max_age_days: state.config.calibration_max_age.as_secs() / 86_400,
        multiple: calibration::NOISE_MULTIPLE,
        mode_floors: per_mode(calibration::floor_percent),
        mode_defaults: per_mode(calibration::uncalibrated_percent),
        comparisons,
        jobs,
    })
}
