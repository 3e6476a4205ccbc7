//! Arguments of `patchperf-runner workload-map`.

use std::path::PathBuf;

/// Arguments of `patchperf-runner workload-map`: derive which source files
/// each workload exercises from its perf profile, on real kernels booted
/// here, and write the map (`common/src/workload/map.tsv`'s format).
#[derive(Debug, clap::Args)]
pub struct WorkloadMapArgs {
    /// A base to derive the map on: a tarball name (`/usr/src/<name>.tar.*`)
    /// or path; repeat for several, whose maps are merged.
    #[arg(long, value_name = "TARBALL", default_values = ["linux-source-6.12", "linux-source-6.1"])]
    pub base: Vec<String>,
    /// Write the map into this directory, as `map.tsv` (files) and
    /// `functions.tsv` (functions): `common/src/workload/` updates the
    /// map the server uses. Default: both printed on standard output.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Measured seconds of each workload's profiled run (after 1 s of
    /// warm-up): the benchmark guest samples at its 250 Hz tick, so 4 s
    /// are ~1000 samples, one sample 0.1% (the map keeps functions over
    /// 0.05%).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=60))]
    pub seconds: u32,
    /// Only these workloads (default: every workload).
    #[arg(long, short = 'w', value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Cache directory (default $PATCHPERF_CACHE, else /var/cache/patchperf).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Keep the boots' results and guest files here (default: a temporary
    /// directory, removed at the end). A base whose boot is kept there
    /// already is not booted again: its kept samples are mapped anew.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}
