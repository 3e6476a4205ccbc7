//! Arguments of `patchperf-runner agent`.

/// Arguments of `patchperf-runner agent`.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {}
