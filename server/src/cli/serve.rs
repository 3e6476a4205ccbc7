//! Arguments of `patchperf-server serve`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::DatabaseArgs;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Address to listen on.
    #[arg(long, env = "PATCHPERF_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Also serve Prometheus' /metrics, without a token, on this address
    /// (e.g. 127.0.0.1:9464, or the monitoring network's); /metrics on
    /// --listen always needs a token (`--kind metrics`, or an admin's).
    #[arg(long, env = "PATCHPERF_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// How long a claim or heartbeat keeps a job leased, 10s to 1d (a
    /// runner heartbeats a few times a lease); a bare number is seconds.
    #[arg(
        long = "lease",
        alias = "lease-seconds",
        env = "PATCHPERF_LEASE_SECONDS",
        value_name = "DURATION",
        default_value = "120s",
        value_parser = super::durations::lease
    )]
    pub lease: Duration,
    /// Claims per job before a lease that runs out fails it.
    #[arg(long, env = "PATCHPERF_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: u32,
    /// Largest request body in bytes (an mbox or a run upload).
    #[arg(long, env = "PATCHPERF_BODY_LIMIT", default_value_t = 16 * 1024 * 1024)]
    pub body_limit: usize,
    /// Absolute URL of this server for links in answers (e.g.
    /// https://perf.example.org); links are relative when unset.
    #[arg(long, env = "PATCHPERF_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,
    /// Require a token (of any kind) to read: the pages and every GET of the
    /// API but /healthz answer 401 without one. Off: reads are public.
    #[arg(
        long,
        visible_alias = "require-token-for-reads",
        env = "PATCHPERF_PRIVATE"
    )]
    pub private: bool,
    /// Where to keep the bare mirrors of the repositories that git ranges
    /// name (default: patchperf-server-git in the temporary directory).
    #[arg(long, env = "PATCHPERF_GIT_DIR", value_name = "DIR")]
    pub git_dir: Option<std::path::PathBuf>,
    /// Let a git range name a repository on this machine (an absolute path
    /// or file://): for a lab whose server sits beside its repositories.
    #[arg(long, env = "PATCHPERF_LOCAL_GIT")]
    pub local_git: bool,
    /// Longest one git command (a clone, a fetch) may take; a bare number
    /// is seconds.
    #[arg(
        long = "git-timeout",
        alias = "git-timeout-seconds",
        env = "PATCHPERF_GIT_TIMEOUT_SECONDS",
        value_name = "DURATION",
        default_value = "30m",
        value_parser = super::durations::git
    )]
    pub git_timeout: Duration,
    /// Longest a clone or fetch may go without receiving a byte
    /// (connecting may take 10 s); a bare number is seconds.
    #[arg(
        long = "git-stall",
        alias = "git-stall-seconds",
        env = "PATCHPERF_GIT_STALL_SECONDS",
        value_name = "DURATION",
        default_value = "60s",
        value_parser = super::durations::git
    )]
    pub git_stall: Duration,
    /// Most git commands at once; requests beyond are answered 503 with
    /// Retry-After.
    #[arg(
        long,
        env = "PATCHPERF_GIT_JOBS",
        default_value_t = 8,
        value_parser = clap::value_parser!(u32).range(1..=256)
    )]
    pub git_jobs: u32,
    /// Most clones and fetches at once from one remote (host:port).
    #[arg(
        long,
        env = "PATCHPERF_GIT_JOBS_PER_REMOTE",
        default_value_t = 2,
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    pub git_jobs_per_remote: u32,
    /// Most bytes the git mirrors may take together (the least recently
    /// used are removed first; 0: no bound).
    #[arg(long, env = "PATCHPERF_GIT_CACHE_MAX_BYTES", default_value_t = 32 << 30)]
    pub git_cache_max_bytes: u64,
    /// Prune the bulky data (per-second series, profiles, samples) of
    /// comparisons finished longer ago than this (`90d`), every 6 hours;
    /// their reports, verdicts and histories stay (0: never; `prune` by
    /// hand). A bare number is days.
    #[arg(
        long = "prune-after",
        alias = "prune-after-days",
        env = "PATCHPERF_PRUNE_AFTER_DAYS",
        value_name = "DURATION",
        default_value = "0",
        value_parser = super::durations::prune_after
    )]
    pub prune_after: Duration,
    /// Let git remotes and webhooks that users name be at loopback,
    /// link-local, private (10/8, 172.16/12, 192.168/16) or unique-local
    /// addresses: for a lab whose git server or hook receiver is internal.
    /// Off: such destinations are refused (checked after DNS, at connect).
    #[arg(long, env = "PATCHPERF_ALLOW_PRIVATE_DESTINATIONS")]
    pub allow_private_destinations: bool,
    /// SMTP relay that reports are mailed through: smtp://host:25 (plain),
    /// smtp://host:587?tls=opportunistic (STARTTLS when offered),
    /// ?tls=required, or smtps://user:password@host (TLS). Without it mail
    /// stays queued.
    #[arg(
        long,
        env = "PATCHPERF_SMTP_URL",
        hide_env_values = true,
        requires = "mail_from"
    )]
    pub smtp_url: Option<String>,
    /// From: of the mailed reports, e.g. "patchperf <perf@example.org>".
    #[arg(long, env = "PATCHPERF_MAIL_FROM")]
    pub mail_from: Option<String>,
    /// Do not queue an A/A comparison on a machine before its first A/B
    /// comparison of a kind of run (nor when its A/A grew old or the machine
    /// changed): its reports then judge with the mode's default δ until an
    /// A/A is submitted by hand.
    #[arg(long, env = "PATCHPERF_NO_AUTO_CALIBRATE")]
    pub no_auto_calibrate: bool,
    /// How long an A/A comparison calibrates δ for (its machine's
    /// comparisons created within that time after it), 1d to 3650d; a
    /// bare number is days.
    #[arg(
        long = "calibration-max-age",
        alias = "calibration-max-age-days",
        env = "PATCHPERF_CALIBRATION_MAX_AGE_DAYS",
        value_name = "DURATION",
        default_value = "30d",
        value_parser = super::durations::calibration_max_age
    )]
    pub calibration_max_age: Duration,
}

/// `--public-url`: an absolute `http://` or `https://` URL with a host and
/// nothing after its path (mail and answers link below it).
fn public_url(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "{text:?}: the public URL is http:// or https:// and a host (https://perf.example.org)"
        ));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(format!(
            "{text:?}: the public URL has no user, query or fragment"
        ));
    }
    Ok(text.to_string())
}
