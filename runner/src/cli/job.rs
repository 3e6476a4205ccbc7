//! Arguments of `patchperf-runner job`.

use std::path::PathBuf;

/// Arguments of `patchperf-runner job`: run a whole comparison described by
/// a TOML job file on this machine (see `commands::job::jobfile` for the
/// format).
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The job file.
    pub file: PathBuf,
    /// Results directory: OUT/base/*.json, OUT/patched/*.json (one
    /// RunResult each, for `compare`) and OUT/job.json. Default:
    /// `<job file stem>-results`.
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
