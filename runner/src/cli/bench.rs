//! Arguments of `patchperf-runner bench`.

/// Arguments of `patchperf-runner bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {}
