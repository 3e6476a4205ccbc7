//! The host–guest protocol: what the host and a booted benchmark guest say
//! to each other, through the `out` share (a host directory the guest
//! mounts over 9p) and the serial console:
//!
//! - the host writes [`REQUEST_FILE`] ([`GuestRequest`]: the runs to do);
//! - the guest prints [`UP_MARKER`] on the console once its init runs (the
//!   boot is over), [`RUN_MARKER`] before each run and [`DONE_MARKER`] at
//!   the end, then powers off;
//! - it writes each run's [`RunResult`](patchperf_common::run::RunResult)
//!   as `run-<i>.json` as soon as the run ends (and, where asked, the
//!   functions its syscalls ran through as `paths-<i>.json`), and
//!   [`REPORT_FILE`] ([`GuestReport`]: `uname`, errors) first at start and
//!   again at the end.

use patchperf_common::protocol::{NrTask, WorkloadParams};
use patchperf_common::run::MeasurementMode;
use serde::{Deserialize, Serialize};

/// The 9p mount tag of the results share.
pub const OUT_TAG: &str = "out";
/// Where the guest mounts its tmpfs (workload scratch and the share's
/// mount point live there: the 9p root is read-only).
pub const GUEST_TMP: &str = "/tmp";
/// Where the guest mounts the `out` share.
pub const GUEST_OUT: &str = "/tmp/patchperf-out";
/// The host's request, in the share.
pub const REQUEST_FILE: &str = "request.json";
/// The guest's report, in the share.
pub const REPORT_FILE: &str = "guest.json";
/// Console line: the guest's init runs, so the kernel booted.
pub const UP_MARKER: &str = "patchperf-guest: up";
/// Console line prefix before each run: `patchperf-guest: run 1/3 open1`.
pub const RUN_MARKER: &str = "patchperf-guest: run ";
/// Console line: every run is over, results are written.
pub const DONE_MARKER: &str = "patchperf-guest: done";

/// The results file of run `i` (0-based), in the share.
pub fn run_file(i: usize) -> String {
    format!("run-{i:03}.json")
}

/// The syscall paths of run `i` (0-based), in the share, where the
/// request asks for them.
pub fn paths_file(i: usize) -> String {
    format!("paths-{i:03}.json")
}

/// One run for the guest to do, with the request's [`WorkloadParams`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestRun {
    /// Workload name.
    pub workload: String,
    /// One of the params' task counts, resolved against the guest's CPUs.
    pub nr_task: NrTask,
}

/// Everything a boot is to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestRequest {
    /// Recorded in every result.
    pub measurement: MeasurementMode,
    /// The job's parameters (mode, run length, perf), the same for every
    /// run.
    pub params: WorkloadParams,
    /// The runs, in order.
    pub runs: Vec<GuestRun>,
    /// Also write each profiled run's syscall paths ([`paths_file`]),
    /// for `workload-map`.
    #[serde(default)]
    pub syscall_paths: bool,
}

/// What the guest reports besides the results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GuestReport {
    /// `uname -r`.
    pub release: String,
    /// `uname -v`.
    pub version: String,
    /// Online CPUs.
    pub nr_cpu: u32,
    /// Results files written, in run order.
    #[serde(default)]
    pub results: Vec<String>,
    /// Runs that failed, with why.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Every run was attempted.
    #[serde(default)]
    pub finished: bool,
}
