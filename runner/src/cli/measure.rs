//! What to measure and where, as `submit` and `track` both ask it: the
//! workloads and their parameters, boots per side, perf collectors, the
//! measurement mode, a Kconfig fragment and the machine (or pool).

use std::path::PathBuf;

use patchperf_common::run::MeasurementMode;

use super::bench::{ModeArg, PerfArg};

/// The workloads and how each runs: what a comparison, a tracked tree
/// and a local `job` ask alike.
#[derive(Debug, clap::Args)]
pub struct WorkloadArgs {
    /// Workloads to run in every boot (comma list; see `bench --list`).
    /// Left out: those the workload map gives the files the series (or
    /// each push) touches; nothing is measured where no workload exercises
    /// any of them.
    #[arg(short, long = "workload", value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Task counts (comma list of N or a share of CPUs such as 100%).
    #[arg(
        short = 't',
        long = "tasks",
        value_name = "NR_TASK",
        value_delimiter = ',',
        default_value = "1"
    )]
    pub nr_task: Vec<String>,
    /// Processes or threads.
    #[arg(long, value_enum, default_value_t = ModeArg::Process)]
    pub mode: ModeArg,
    /// Measured seconds per run (default: the measurement mode's, 1 under
    /// tcg-icount, else 5; fixed when the mode is known, at the latest
    /// when a machine claims the comparison).
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<u32>,
    /// Warm-up seconds per run, dropped (default: the measurement mode's,
    /// 1 under tcg-icount, else 2).
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<u32>,
}

/// The measurement a comparison or a tracked tree asks for.
#[derive(Debug, clap::Args)]
pub struct MeasureArgs {
    /// The workloads and how each runs.
    #[command(flatten)]
    pub load: WorkloadArgs,
    /// Boots per side (at least 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(3..))]
    pub runs: u32,
    /// While a headline verdict is undecided once every job is done, the
    /// server doubles the boots per side up to this many (default: 4 ×
    /// --runs when --measurement is given, else --runs).
    #[arg(long, value_name = "N")]
    pub max_runs: Option<u32>,
    /// perf collectors inside each booted kernel (comma list).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "stat,profile")]
    pub perf: Vec<PerfArg>,
    /// How the kernels are run and timed, when it must be this one (the
    /// runner's best when absent): kvm (hardware speed), tcg (emulated,
    /// wall clock), tcg-icount (emulated, guest time counts instructions),
    /// kexec (bare metal), host (the running kernel). Formerly `--backend`.
    #[arg(long, alias = "backend", value_name = "MODE", value_parser = measurement_parser())]
    pub measurement: Option<MeasurementMode>,
    /// Extra Kconfig lines for both kernels, from a file (a Kconfig
    /// fragment; `--config` names a settings file elsewhere, and is kept
    /// here as an old spelling).
    #[arg(long, alias = "config", value_name = "FILE")]
    pub kconfig: Option<PathBuf>,
    /// Build both kernels with every function aligned to 64 bytes
    /// (CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B), so that code layout moves
    /// less between them: for wall-clock machines, where layout alone can
    /// move a syscall loop by 1–5%.
    #[arg(long)]
    pub align_functions: bool,
    /// Name of the machine to measure on.
    #[arg(long)]
    pub machine: Option<String>,
    /// Measure on a pool instead of one machine: the first machine an
    /// admin labelled so to take a comparison runs all of it.
    #[arg(long, value_name = "LABEL", conflicts_with = "machine")]
    pub pool: Option<String>,
}

/// A measurement mode as the API spells it (`tcg-icount`); clap lists the
/// values in `--help` and in its refusal.
pub(super) fn measurement_parser() -> impl clap::builder::TypedValueParser<Value = MeasurementMode>
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(MeasurementMode::ALL.map(MeasurementMode::as_str))
        .map(|s| MeasurementMode::parse(&s).expect("a possible value is a mode"))
}
