//! perf collection around a workload's measured seconds, producing 0-day's
//! `perf-stat.*` and `perf-profile.*` metrics (names in
//! `patchperf_common::metric`).
//!
//! Each collector keeps its running and its parsing side by side, as
//! lkp-tests does (`programs/<name>/run`, `…/parse`): `stat/{run,parse,
//! metrics}.rs` and `profile/{run,parse,metrics}.rs`; the parsers and the
//! arithmetic are pure functions fed by fixtures in the tests. `session`
//! drives both around a run in the order that keeps each perf's own cost
//! out of the other's numbers, `env` decides whether perf can be used here
//! at all, `exec` is the one place processes are started.
//!
//! Nothing here depends on the host: the collectors read the running
//! kernel's `/proc` and run whatever `perf` is on `PATH`, so they work the
//! same inside a booted benchmark guest.
//!
//! Profile names always say `cycles-pp` (0-day's spelling of `cycles:pp`),
//! whichever event was sampled; the event actually used goes into
//! `RunResult::profile_event` so a report can say which.

use std::path::PathBuf;
use std::str::FromStr;

use crate::harness::Collector;

pub mod env;
pub mod exec;
pub mod profile;
pub mod session;
pub mod stat;

pub use crate::error::{PerfError, ProcessProblem};
pub use env::Perf;
pub use profile::PerfProfile;
pub use session::PerfSession;
pub use stat::PerfStat;

/// The events perf stat counts by default: the hardware events 0-day's
/// derived metrics need, and the software events every kernel has.
pub const DEFAULT_STAT_EVENTS: &[&str] = &[
    "cycles",
    "instructions",
    "branch-instructions",
    "branch-misses",
    "cache-references",
    "cache-misses",
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];

/// One perf collector a run can switch on (`--perf stat,profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PerfTool {
    /// `perf stat`: `perf-stat.*` metrics.
    Stat,
    /// `perf record` + `perf script`: `perf-profile.*` metrics.
    Profile,
}

impl FromStr for PerfTool {
    type Err = PerfError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "stat" => Ok(PerfTool::Stat),
            "profile" => Ok(PerfTool::Profile),
            other => Err(PerfError::Options(format!(
                "unknown perf collector `{other}` (known: stat, profile)"
            ))),
        }
    }
}

/// How the perf collectors run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfOptions {
    /// The perf executable (a bare name is looked up on `PATH`).
    pub program: PathBuf,
    /// Where the collectors keep perf's output while they work (removed
    /// afterwards); must be writable, e.g. a tmpfs inside a guest.
    pub work_dir: PathBuf,
    /// Events for perf stat, as perf names them (no commas: perf's CSV
    /// output does not quote fields).
    pub stat_events: Vec<String>,
    /// perf stat's interval (`-I`), in milliseconds.
    pub interval_ms: u32,
    /// perf record's sampling frequency per CPU (`-F`), in Hz.
    pub profile_frequency: u32,
    /// Also write the kernel functions the workload's syscalls ran
    /// through, from the profile's samples (`workload-map`).
    pub syscall_paths: Option<PathsRequest>,
}

/// Where a profile writes its [`profile::paths::SyscallPaths`], and the
/// workload whose tasks' samples it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathsRequest {
    /// The workload.
    pub workload: String,
    /// The JSON file to write.
    pub out: PathBuf,
}

impl Default for PerfOptions {
    fn default() -> Self {
        Self {
            program: PathBuf::from("perf"),
            work_dir: std::env::temp_dir(),
            stat_events: DEFAULT_STAT_EVENTS.iter().map(|e| e.to_string()).collect(),
            interval_ms: 1000,
            // Not a multiple of the scheduler tick, so samples do not march
            // in step with timer interrupts.
            profile_frequency: 999,
            syscall_paths: None,
        }
    }
}

impl PerfOptions {
    /// A fresh scratch directory for one collector, removed when dropped.
    pub(crate) fn scratch_dir(&self, what: &str) -> Result<tempfile::TempDir, PerfError> {
        tempfile::Builder::new()
            .prefix(&format!("patchperf-perf-{what}-"))
            .tempdir_in(&self.work_dir)
            .map_err(|err| {
                PerfError::io(
                    format!(
                        "cannot make a scratch directory in {}",
                        self.work_dir.display()
                    ),
                    err,
                )
            })
    }
}

/// The collector asked for, and the warnings for what cannot run.
#[derive(Default)]
pub struct PerfSetup {
    /// Ready to start: one [`PerfSession`], or none when perf cannot be used.
    pub collectors: Vec<Box<dyn Collector>>,
    /// What to tell the user and store in `RunResult::warnings`.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for PerfSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.collectors.iter().map(|c| c.name()).collect();
        f.debug_struct("PerfSetup")
            .field("collectors", &names)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// Builds the collector for `tools`: one [`PerfSession`] driving perf stat
/// and/or perf profile. When perf is missing or not allowed to count
/// system-wide, the result has no collector and one warning: the run goes on
/// without perf metrics.
pub fn setup(tools: &[PerfTool], options: &PerfOptions) -> PerfSetup {
    let mut setup = PerfSetup::default();
    if tools.is_empty() {
        return setup;
    }
    let perf = match Perf::detect(&options.program) {
        Ok(perf) => perf,
        Err(warning) => {
            setup.warnings.push(warning.to_string());
            return setup;
        }
    };
    let mut stat = None;
    let mut profile = None;
    if tools.contains(&PerfTool::Stat) {
        match PerfStat::new(perf.clone(), options) {
            Ok(collector) => stat = Some(collector),
            Err(err) => setup.warnings.push(format!("perf-stat: {err}")),
        }
    }
    if tools.contains(&PerfTool::Profile) {
        match PerfProfile::new(perf, options) {
            Ok(collector) => profile = Some(collector),
            Err(err) => setup.warnings.push(format!("perf-profile: {err}")),
        }
    }
    let session = PerfSession::new(stat, profile);
    if !session.is_empty() {
        setup.collectors.push(Box::new(session));
    }
    setup
}
