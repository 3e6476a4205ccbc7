//! Arguments of `patchperf-runner agent`.

use std::path::PathBuf;

/// Arguments of `patchperf-runner agent`. Each flag may instead be set in
/// the settings file by its long name (`server = "http://…"`).
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// Settings file (TOML): these flags by their long names; flags and
    /// environment variables win over it. Default:
    /// /etc/patchperf/runner.toml when it exists.
    #[arg(long, env = "PATCHPERF_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// A runner token (`patchperf-server token create --kind runner`).
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Machine name to register as (default: the host name; formerly
    /// `--name`, and `$PATCHPERF_NAME`, which still counts and wins).
    #[arg(long = "machine", alias = "name", env = "PATCHPERF_MACHINE")]
    pub name: Option<String>,
    /// Where results wait while the server is unreachable.
    #[arg(long, env = "PATCHPERF_SPOOL", default_value = "/var/spool/patchperf")]
    pub spool: PathBuf,
    /// Where built kernels, ccache, the per-job scratch trees and (with
    /// --kexec) the job's state across reboots are kept.
    #[arg(long, env = "PATCHPERF_CACHE", default_value = "/var/cache/patchperf")]
    pub cache: PathBuf,
    /// Claim at most one job, execute it, deliver what is spooled, exit.
    #[arg(long, env = "PATCHPERF_ONCE")]
    pub once: bool,
    /// How long each claim long-polls the server for work: `30s` (a bare
    /// number is seconds; the server caps it at about 30; formerly
    /// `--wait`).
    #[arg(
        long = "claim-wait",
        alias = "wait",
        env = "PATCHPERF_WAIT",
        value_name = "DURATION",
        value_parser = super::duration::parse_duration,
        default_value = "30s"
    )]
    pub wait: std::time::Duration,
    /// Guests to run at once under tcg-icount, where guest time counts
    /// instructions and one guest does not slow another's numbers (default:
    /// CPUs − 1, at least 1); on a machine that measures in tcg-icount also
    /// the most jobs of different comparisons held at once. Wall-clock
    /// modes always run one at a time.
    #[arg(long, env = "PATCHPERF_PARALLEL", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
    /// Bare metal: boot this machine itself into each kernel with kexec
    /// (one reboot per boot slot) instead of QEMU. Start the agent again at
    /// every boot (e.g. a systemd unit): it resumes the job from the state
    /// in the cache directory.
    #[arg(long, env = "PATCHPERF_KEXEC")]
    pub kexec: bool,
}
