//! Arguments of `patchperf-runner lab-init`, the init of a VM that plays a
//! bare-metal lab machine (`bench/kexec-vm.sh`).

use std::path::PathBuf;

/// Arguments of `patchperf-runner lab-init`.
///
/// The kernel starts it as init (`init=<runner> -- lab-init --env-file F
/// agent --kexec …`; no second `--`: the kernel drops one and everything
/// after it from init's arguments): it mounts proc, sys, devtmpfs and a tmpfs, runs
/// this binary with ARGS and the environment of FILE, and powers the
/// machine off when that exits.
#[derive(Debug, clap::Args)]
pub struct LabInitArgs {
    /// `NAME=VALUE` lines (blank lines and `#` comments allowed) for the
    /// command's environment, e.g. PATCHPERF_TOKEN, which then stays off
    /// the kernel command line and the console.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
    /// The runner's arguments, e.g. `agent --kexec --name lab`: everything
    /// from the first one on.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "ARGS"
    )]
    pub command: Vec<String>,
}
