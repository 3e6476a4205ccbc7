//! Arguments of `patchperf-runner job`.

use std::path::PathBuf;

use patchperf_common::run::MeasurementMode;

use super::measure::WorkloadArgs;

/// Arguments of `patchperf-runner job`: run a whole comparison on this
/// machine, described by a TOML job file (see `commands::job::jobfile` for
/// the format) or by the command line: `--patches MBOX` on a source
/// tarball, or `--range A..B` / `--commit C` of the clone the current
/// directory is in, built from that clone.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Without a job file:
  patchperf-runner job --patches fix.mbox -w dup1,open1
  git format-patch --stdout origin/master.. | patchperf-runner job --patches - -w open1
  patchperf-runner job --range origin/master..HEAD -w fstat --per-patch

Exit status: 0 measured (with --fail-on-regression: and no headline \
regressed); 1 the job failed (a patch does not apply, a kernel does not \
build or boot); 2 refused (a bad command line or job file, an mbox \
without a patch); 3 a headline regressed, with --fail-on-regression; \
130 interrupted.")]
pub struct JobArgs {
    /// The job file (or the series on the command line: --patches,
    /// --range, --commit).
    #[arg(conflicts_with_all = ["workloads", "nr_task", "mode", "seconds", "warmup"])]
    pub file: Option<PathBuf>,
    /// Instead of a job file: the series to measure, an mbox (`git
    /// format-patch` output, or `b4 am -o -`); `-` reads standard input.
    #[arg(long, value_name = "MBOX", conflicts_with_all = ["file", "range", "commit"])]
    pub patches: Option<PathBuf>,
    /// Instead of a job file: the commits A..B (`A..` for A..HEAD) of the
    /// clone the current directory is in, measured on their merge base;
    /// both kernels are built from this clone.
    #[arg(long, value_name = "A..B", conflicts_with_all = ["file", "commit"])]
    pub range: Option<String>,
    /// Instead of a job file: one commit of this clone, against its parent.
    #[arg(long, value_name = "COMMIT", conflicts_with = "file")]
    pub commit: Option<String>,
    /// With --patches: the base, a source tarball's name
    /// (`linux-source-6.12`, from /usr/src) or path; default: Debian's
    /// newest source package.
    #[arg(long, value_name = "TARBALL", requires = "patches")]
    pub base: Option<String>,
    /// Without a job file: the workloads and how each runs.
    #[command(flatten)]
    pub load: WorkloadArgs,
    /// Without a job file: boots per side, in randomized ABBA blocks.
    #[arg(long, default_value_t = 3, conflicts_with = "file")]
    pub runs: u32,
    /// Without a job file: the measurement mode; the best this machine has
    /// when left out.
    #[arg(long, alias = "backend", value_name = "MODE", value_parser = super::measure::measurement_parser(), conflicts_with = "file")]
    pub measurement: Option<MeasurementMode>,
    /// Without a job file: a Kconfig fragment for both kernels.
    #[arg(long, value_name = "FILE", conflicts_with = "file")]
    pub kconfig: Option<PathBuf>,
    /// Without a job file: also measure each patch against the ones before
    /// it (OUT/step-K/).
    #[arg(long, conflicts_with = "file")]
    pub per_patch: bool,
    /// Without a job file: the seed of the boot order (random otherwise).
    #[arg(long, conflicts_with = "file")]
    pub seed: Option<u64>,
    /// Exit with status 3 when a report's headline verdict is a regression.
    #[arg(long, conflicts_with = "build_only")]
    pub fail_on_regression: bool,
    /// Results directory: OUT/base/*.json, OUT/patched/*.json (one
    /// RunResult each, for `compare`) and OUT/job.json. Default:
    /// `<job file stem>-results`, or `job-results` without a job file.
    #[arg(long, short = 'o', value_name = "OUT")]
    pub out: Option<PathBuf>,
    /// Cache directory (default $PATCHPERF_CACHE, else /var/cache/patchperf).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Guests to run at once under tcg-icount (default: CPUs − 1, at
    /// least 1); wall-clock modes run one at a time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
    /// Only build both kernels into the cache and print their cache
    /// directories (`base DIR`, `patched DIR`); boot nothing. For a machine
    /// that should find a job's kernels already built (a kexec lab VM).
    #[arg(long, conflicts_with = "out")]
    pub build_only: bool,
}
