//! Arguments of `patchperf-runner guest`, the init of a benchmark guest.

use std::path::PathBuf;

/// Arguments of `patchperf-runner guest`.
///
/// The kernel starts it as init (`init=<runner> -- guest`); it mounts
/// proc, sys, devtmpfs, a tmpfs and the `out` share, does the runs the host
/// asked for in the share's `request.json`, writes the results there and
/// powers the guest off.
#[derive(Debug, clap::Args)]
pub struct GuestArgs {
    /// Use this directory as the share instead of mounting anything and
    /// do not power off: for trying the guest side on a host.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Booted by kexec on bare metal: mount proc, sys, devtmpfs and a
    /// tmpfs, write results into DIR on the machine's root file system and
    /// reboot into the machine's normal kernel.
    #[arg(long, value_name = "DIR", conflicts_with = "out_dir")]
    pub kexec_out: Option<PathBuf>,
}
