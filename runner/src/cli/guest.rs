//! Arguments of `patchperf-runner guest`.

/// Arguments of `patchperf-runner guest`.
#[derive(Debug, clap::Args)]
pub struct GuestArgs {}
