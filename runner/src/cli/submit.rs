//! Arguments of `patchperf-runner submit`: the CI side of the server's API
//! (submit a patch series for comparison, optionally wait for the verdict).

use std::path::PathBuf;
use std::time::Duration;

pub use super::duration::{minutes_or_duration, parse_duration};

use super::measure::MeasureArgs;

/// Arguments of `patchperf-runner submit`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Prints the comparison id and its report URL. With --wait it follows the jobs \
(what each waits for and does, as the server and the runner report it), then \
prints the 0-day style text report and the verdict.

Exit status: 0 done (no regression, or one without --fail-on-regression); \
1 the comparison failed (a patch does not apply, a build or boot failed, \
cancelled); 2 refused (a bad command line, or the server answered 4xx: bad \
arguments, a bad token); 3 a regression, with --fail-on-regression; 4 --wait \
gave up (--timeout passed, or no runner took the work for --stall-timeout); \
75 the server could not be reached or answered 5xx (retry later); 130 \
interrupted.")]
pub struct SubmitArgs {
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// A CI token (`patchperf-server token create --kind ci`);
    /// `$PATCHPERF_CI_TOKEN`, its earlier variable, still counts and wins.
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The patch series as an mbox file (`git format-patch --stdout`, b4 am,
    /// a lore mbox); `-` reads standard input.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["aa", "range", "bisect", "commit", "msgid"])]
    pub mbox: Option<PathBuf>,
    /// The series a posting belongs to (its Message-ID), fetched as
    /// `b4 am -o - MSGID` fetches it: the newest version, with its
    /// trailers, from the archive b4's `b4.midmask` names (lore.kernel.org
    /// unless your git configuration says otherwise). Needs b4.
    #[arg(long, value_name = "MSGID", conflicts_with_all = ["mbox", "aa", "range", "commit", "bisect"])]
    pub msgid: Option<String>,
    /// An A/A comparison instead: no patch, both sides boot the base
    /// kernel. The ± bound it measures is the machine's noise floor for
    /// that kind of run; δ, the smallest change later reports on the
    /// machine call real, is twice it (at least the mode's minimum δ).
    #[arg(long, conflicts_with = "mbox")]
    pub aa: bool,
    /// Also measure each patch of the series on its own: patch k against
    /// patches 1..k-1, one comparison per patch beside the whole series'.
    #[arg(long, conflicts_with = "aa")]
    pub per_patch: bool,
    /// Bisect instead of comparing: find the first commit of --range (or of
    /// --comparison's series) that moves --metric of the one --workload,
    /// one probe (a comparison against the good end) after another on one
    /// machine. With --wait, prints the answer ("first bad commit: …").
    #[arg(long, conflicts_with_all = ["aa", "per_patch", "mbox"])]
    pub bisect: bool,
    /// With --bisect: the finished comparison whose series to bisect.
    #[arg(long, requires = "bisect", conflicts_with_all = ["git", "range"])]
    pub comparison: Option<i64>,
    /// With --bisect: the metric that moved (default: the workload's
    /// will-it-scale ops a task).
    #[arg(long, requires = "bisect")]
    pub metric: Option<String>,
    /// Base tree as a source tarball the runner knows by name (Debian's
    /// newest kernel source package by default).
    #[arg(long, default_value = crate::kernel::fetch::source::DEFAULT_TARBALL, conflicts_with = "git")]
    pub base: String,
    /// Base tree as a git URL (with --commit, or --range).
    #[arg(long)]
    pub git: Option<String>,
    /// With --git: the base's commit id, tag or branch in it. Without
    /// --git, inside a clone: the one commit to measure, on its parent
    /// (formatted here and sent with its upstream, see --range).
    #[arg(long, conflicts_with = "range")]
    pub commit: Option<String>,
    /// With --git: measure every commit of the range `A..B` of that
    /// repository on its own (B's first-parent commits after A, a merge as
    /// one step), on A as base; the server reads the commits. Without
    /// --git, inside a clone (`origin/master..HEAD`, `HEAD~3..`): the
    /// commits are formatted here (`git format-patch --base`) and sent
    /// with their base, the merge base of A and B in the upstream
    /// (--base-url, else A's remote, the branch's upstream remote or the
    /// only remote), so the server needs only the upstream.
    #[arg(long, value_name = "A..B", conflicts_with_all = ["mbox", "aa"])]
    pub range: Option<String>,
    /// The upstream repository the base commit is in: for a range or
    /// commit of this clone (instead of the remote found), or for an
    /// --mbox whose `base-commit:` line names the commit to build on.
    #[arg(long, value_name = "URL", conflicts_with = "git")]
    pub base_url: Option<String>,
    /// What to measure and where.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Follow the comparison until it ends and print its text report.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: exit with status 3 when the verdict is a regression.
    #[arg(long, requires = "wait")]
    pub fail_on_regression: bool,
    /// Print one JSON document on standard output when done: the
    /// comparison's id, status, verdict, headlines and report URL, and how
    /// the command ended (`exit`: done, failed, refused, regression,
    /// gave-up, unreachable, interrupted; `exit_code`; `message`). The
    /// lines for a person go to standard error.
    #[arg(long)]
    pub json: bool,
    /// With --wait: cancel the comparison when SIGINT or SIGTERM ends the
    /// wait (a CI job cancelled); without it the comparison goes on, and
    /// its id and how to follow or cancel it are said.
    #[arg(long, requires = "wait")]
    pub cancel_on_signal: bool,
    /// With --wait: time between polls (`2s`; a cached tcg-icount verdict
    /// takes under 20 s; a poll is one small GET).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    pub poll: Duration,
    /// With --wait: give up (exit 4) when the comparison has not ended
    /// after this long: `90m`, `2h`, `3600s` or seconds. Default: no limit.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "wait")]
    pub timeout: Option<Duration>,
    /// With --wait: give up (exit 4) when the server has said for this
    /// long that nothing moves (no runner calls, or the comparison's
    /// machine stopped calling): `30m`, `2h` (a bare number is minutes); 0
    /// waits for ever.
    #[arg(long, value_name = "DURATION", value_parser = minutes_or_duration, default_value = "30m")]
    pub stall_timeout: Duration,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_lists_every_exit_status() {
        use crate::error::exit;
        let cli = <crate::cli::Cli as clap::CommandFactory>::command();
        let help = cli
            .find_subcommand("submit")
            .and_then(|c| c.get_after_help())
            .unwrap()
            .to_string();
        for code in [
            exit::FAILED,
            exit::REFUSED,
            exit::REGRESSION,
            exit::GAVE_UP,
            exit::TEMPFAIL,
            exit::INTERRUPTED,
        ] {
            assert!(
                help.contains(&format!(" {code} ")),
                "{code} is not in {help}"
            );
        }
    }
}
