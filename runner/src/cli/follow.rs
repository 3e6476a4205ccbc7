//! Arguments of `patchperf-runner status`, `wait` and `cancel`: one
//! comparison a CI job submitted earlier (`submit` without `--wait`, or a
//! wait that was cut short), by its id.

use std::time::Duration;

use super::duration::{minutes_or_duration, parse_duration};

/// Arguments of `status`, `wait` and `cancel`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 done (status: also while it runs); 1 the comparison failed \
or was cancelled (wait); 2 refused (a bad command line, or the server \
answered 4xx: no such comparison, a bad token, cancel of one already \
ended); 3 a regression, with --fail-on-regression; 4 wait gave up \
(--timeout, --stall-timeout); 75 the server could not be reached or \
answered 5xx (retry later).")]
pub struct FollowArgs {
    /// The comparison's id, as `submit` printed it.
    pub id: i64,
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// A CI token (`patchperf-server token create --kind ci`);
    /// `$PATCHPERF_CI_TOKEN`, its earlier variable, still counts and wins.
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// status: print the server's whole view of the comparison as JSON.
    /// wait: print one JSON document when done, as `submit --json` does.
    #[arg(long)]
    pub json: bool,
    /// wait: exit with status 3 when the verdict is a regression.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// wait: cancel the comparison when SIGINT or SIGTERM ends the wait (a
    /// CI job cancelled); without it the comparison goes on and its id is
    /// said.
    #[arg(long)]
    pub cancel_on_signal: bool,
    /// wait: time between polls (`2s`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    pub poll: Duration,
    /// wait: give up after this long (90m, 2h, 3600), a server outage
    /// included; the comparison goes on.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// wait: give up when the server says for this long that nothing
    /// moves (no machine takes the work): `30m` (a bare number is
    /// minutes); 0 waits for ever.
    #[arg(long, value_name = "DURATION", value_parser = minutes_or_duration, default_value = "30m")]
    pub stall_timeout: Duration,
}
