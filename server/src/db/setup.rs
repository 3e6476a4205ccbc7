//! How a row (`comparisons`, `trees`, `bisections`) keeps its
//! `Setup` in its `setup` column, and reads back the one in effect: what
//! was asked, with the row's state over it.

use patchperf_common::api::Setup;
use patchperf_common::protocol::WorkloadParams;
use sqlx::types::Json;

/// `setup` as a row stores it: without the machine's name, which the row
/// keeps as its reference `machine_id`.
pub fn stored(setup: &Setup) -> Json<Setup> {
    Json(Setup {
        machine: None,
        ..setup.clone()
    })
}

/// The setup `asked` with the row's state over it: the parameters measured
/// with (the run length is fixed at claim), the runs a side now (more are
/// added while undecided) and the machine it names.
pub fn in_effect(
    asked: &Setup,
    params: &WorkloadParams,
    runs_per_side: i32,
    machine: Option<String>,
) -> Setup {
    Setup {
        params: params.clone().into(),
        runs: u32::try_from(runs_per_side).unwrap_or(0),
        machine,
        ..asked.clone()
    }
}
