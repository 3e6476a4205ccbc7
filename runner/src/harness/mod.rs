//! The workload harness behind the `bench` subcommand: will-it-scale-style
//! workloads on the running kernel.
//!
//! N tasks (processes, or threads) each run one tiny system-call loop and
//! bump their own counter in a shared mapping; the parent reads the
//! counters once a second, drops the warm-up seconds and reports the
//! measured ones as a [`RunResult`] with `will-it-scale.*` metrics.
//! [`Collector`]s (perf stat, perf record) watch the measured seconds.
//!
//! Used by `patchperf-runner bench` on the host and by the guest-side
//! driver inside booted kernels:
//!
//! ```no_run
//! use patchperf_runner::harness::{self, BenchConfig};
//! let mut config = BenchConfig::new("dup1", 2);
//! config.seconds = 5;
//! let result = harness::run(&config, &mut []).unwrap();
//! println!("{:?}", result.metric("will-it-scale.per_process_ops"));
//! ```

use std::path::{Path, PathBuf};

use patchperf_common::limits::MAX_NR_TASK_ASKED;
use patchperf_common::run::{MeasurementMode, RunResult, SecondSample, TaskMode};

mod collector;
mod driver;
pub mod interrupt;
mod pipe;
mod scratch;
mod shared;
mod summary;
mod sys;
mod tasks;
mod workload;
mod workloads;

pub use collector::Collector;
pub use scratch::ScratchKind;

use patchperf_common::run_length::{self, Asker, RunLength};

use crate::Error;

/// `bench`'s run length when not given: will-it-scale's (common's
/// [`run_length`](patchperf_common::run_length) table).
const BENCH: RunLength = run_length::default_for(Asker::Bench, None);
/// Measured seconds when not given.
pub const DEFAULT_SECONDS: u32 = BENCH.seconds;
/// Warm-up seconds when not given (will-it-scale drops its first 5 too).
pub const DEFAULT_WARMUP: u32 = BENCH.warmup_seconds;

/// One run of one workload with one task count.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    /// Workload name, one of `patchperf_common::workload::WORKLOADS`.
    pub workload: String,
    /// Processes (default) or threads.
    pub mode: TaskMode,
    /// Number of tasks, 1 to [`MAX_NR_TASK_ASKED`].
    pub nr_task: u32,
    /// Measured seconds, at least 1.
    pub seconds: u32,
    /// Warm-up seconds, run and dropped.
    pub warmup: u32,
    /// Make the scratch directory inside this directory instead of the
    /// best tmpfs available.
    pub scratch: Option<PathBuf>,
    /// Pin task i to the i-th allowed CPU (mod their number).
    pub affinity: bool,
    /// Recorded in the result: `Host` for `bench`, the boot backend inside
    /// a guest.
    pub measurement: MeasurementMode,
}

impl BenchConfig {
    /// `nr_task` processes of `workload` with the default seconds, warm-up,
    /// scratch and affinity, measured on the host.
    pub fn new(workload: impl Into<String>, nr_task: u32) -> Self {
        BenchConfig {
            workload: workload.into(),
            mode: TaskMode::Process,
            nr_task,
            seconds: DEFAULT_SECONDS,
            warmup: DEFAULT_WARMUP,
            scratch: None,
            affinity: true,
            measurement: MeasurementMode::Host,
        }
    }

    /// Checks the configuration; every complaint is the caller's to fix
    /// ([`Error::Usage`]).
    pub fn validate(&self) -> Result<(), Error> {
        if workloads::find(&self.workload).is_none() {
            return Err(Error::Usage(format!(
                "unknown workload {:?} (known: {})",
                self.workload,
                workload_names().join(", ")
            )));
        }
        if self.nr_task == 0 {
            return Err(Error::Usage(
                "the number of tasks must be at least 1".into(),
            ));
        }
        if self.nr_task > MAX_NR_TASK_ASKED {
            return Err(Error::Usage(format!(
                "{} tasks is more than the {MAX_NR_TASK_ASKED} allowed",
                self.nr_task
            )));
        }
        if self.seconds == 0 {
            return Err(Error::Usage(
                "at least one measured second is needed".into(),
            ));
        }
        Ok(())
    }
}

/// The names of the workloads this runner implements, in catalogue order.
pub fn workload_names() -> Vec<&'static str> {
    workloads::TABLE.iter().map(|e| e.name).collect()
}

/// Which part of the run a second belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Warm-up: shown, then dropped.
    Warmup,
    /// Measured: kept in the result.
    Measurement,
}

/// What a run reports while it goes on.
#[derive(Debug, Clone)]
pub enum Progress<'a> {
    /// The scratch directory is ready and the workload about to be set up.
    Scratch {
        /// The directory (removed when the run ends).
        path: &'a Path,
        /// Where it lives.
        kind: ScratchKind,
        /// Whether it is on a tmpfs.
        tmpfs: bool,
    },
    /// One second is over.
    Second {
        /// Warm-up or measured.
        phase: Phase,
        /// Its will-it-scale line.
        sample: SecondSample,
    },
}

/// Runs one workload as `config` says, with `collectors` watching the
/// measured seconds. A collector's error becomes a warning in the result.
pub fn run(
    config: &BenchConfig,
    collectors: &mut [Box<dyn Collector>],
) -> Result<RunResult, Error> {
    run_observed(config, collectors, &mut |_| {})
}

/// [`run`], telling `observer` about the scratch directory and each second
/// as it ends (the CLI prints will-it-scale's lines from these).
pub fn run_observed(
    config: &BenchConfig,
    collectors: &mut [Box<dyn Collector>],
    observer: &mut dyn FnMut(&Progress<'_>),
) -> Result<RunResult, Error> {
    config.validate()?;
    let entry = workloads::find(&config.workload)
        .ok_or_else(|| Error::Usage(format!("unknown workload {:?}", config.workload)))?;
    if interrupt::pending().is_some() {
        return Err(Error::Interrupted);
    }
    let cpus = if config.affinity {
        Some(tasks::allowed_cpus().map_err(|e| Error::io("reading the CPU affinity mask", e))?)
    } else {
        None
    };
    let scratch = scratch::Scratch::create(config.scratch.as_deref())?;
    observer(&Progress::Scratch {
        path: scratch.path(),
        kind: scratch.kind(),
        tmpfs: scratch.is_tmpfs(),
    });
    let plan = driver::Run {
        mode: config.mode,
        nr_task: config.nr_task,
        seconds: config.seconds,
        warmup: config.warmup,
        measurement: config.measurement,
        scratch: scratch.path(),
        cpus: cpus.as_deref(),
    };
    let mut result = (entry.run)(&plan, collectors, observer)?;
    if !scratch.is_tmpfs() {
        result.warnings.push(format!(
            "scratch directory {} is not on a tmpfs",
            scratch.path().display()
        ));
    }
    Ok(result)
}

/// Checks that a scratch directory can be made inside `dir` (and removes
/// it again), so a CLI can refuse a bad `--scratch` before it prints or
/// runs anything.
pub fn check_scratch_dir(dir: &Path) -> Result<(), Error> {
    scratch::Scratch::create(Some(dir)).map(drop)
}

/// Online CPUs, for resolving `100%`-style task counts.
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}
