//! Arguments of `patchperf-runner job`.

/// Arguments of `patchperf-runner job`.
#[derive(Debug, clap::Args)]
pub struct JobArgs {}
