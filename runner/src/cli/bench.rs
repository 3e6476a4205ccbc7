//! Arguments of `patchperf-runner bench`.

use std::path::PathBuf;

use crate::harness::{DEFAULT_SECONDS, DEFAULT_WARMUP};

/// Arguments of `patchperf-runner bench`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
With several task counts (-t 1,2,100%) each runs in turn, like 0-day's nr_task \
list; --json then writes a JSON array with one run per task count, in the order \
given (a single task count writes one run object).")]
pub struct BenchArgs {
    /// Workload to run (see --list).
    #[arg(required_unless_present = "list")]
    pub workload: Option<String>,
    /// List the workloads with what their loop does, and exit.
    #[arg(long)]
    pub list: bool,
    /// Number of tasks: N, a share of online CPUs (100%, 50%), or a comma
    /// list of those to run one after another.
    #[arg(
        short = 't',
        long = "tasks",
        value_name = "NR_TASK",
        default_value = "1"
    )]
    pub tasks: String,
    /// Run the tasks as processes (will-it-scale's *_processes) or threads.
    #[arg(long, value_enum, default_value_t = ModeArg::Process)]
    pub mode: ModeArg,
    /// Measured seconds.
    #[arg(long, default_value_t = DEFAULT_SECONDS)]
    pub seconds: u32,
    /// Warm-up seconds, run and dropped.
    #[arg(long, default_value_t = DEFAULT_WARMUP)]
    pub warmup: u32,
    /// Write the result(s) as JSON (patchperf's RunResult wire format).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Make the scratch files inside DIR instead of a private tmpfs
    /// (or /dev/shm, or $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Do not pin task i to CPU i mod the number of CPUs.
    #[arg(long)]
    pub no_affinity: bool,
    /// Run perf over the measured seconds, system-wide: `stat` gives
    /// perf-stat.* metrics, `profile` perf-profile.* (call-graph sampling);
    /// comma-separated for both. Without a usable perf the run goes on
    /// without them, with a warning.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "stat,profile")]
    pub perf: Vec<PerfArg>,
}

/// `--perf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PerfArg {
    /// perf stat: perf-stat.* metrics.
    Stat,
    /// perf record + perf script: perf-profile.* metrics.
    Profile,
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Forked processes.
    #[value(alias = "processes")]
    Process,
    /// Threads of one process.
    #[value(alias = "threads")]
    Thread,
}
