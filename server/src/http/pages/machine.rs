//! `/machines` and `/machines/{name}`: what each runner machine is and what
//! it ran lately.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::protocol::FailureReason;

use super::view;
use crate::db::machines::MachineRow;
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

#[derive(Debug, Template, WebTemplate)]
#[template(path = "machine.html")]
pub(super) struct MachinePage {
    m: MachineView,
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
    Ok(MachinePage { m: m.into(), jobs })
}
