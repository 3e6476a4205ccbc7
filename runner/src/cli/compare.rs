//! Arguments of `patchperf-runner compare`.

/// Arguments of `patchperf-runner compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {}
