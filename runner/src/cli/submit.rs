//! Arguments of `patchperf-runner submit`: the CI side of the server's API
//! (submit a patch series for comparison, optionally wait for the verdict).

use std::path::PathBuf;

use super::measure::MeasureArgs;

/// Arguments of `patchperf-runner submit`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Prints the comparison id and its report URL. With --wait it follows the jobs \
(states and messages as the runner reports them), then prints the 0-day style \
text report and exits 0, or 3 with --fail-on-regression when the verdict is a \
regression, or 1 when the comparison failed.")]
pub struct SubmitArgs {
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER")]
    pub server: String,
    /// A CI token (`patchperf-server token create --kind ci`).
    #[arg(long, env = "PATCHPERF_CI_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The patch series as an mbox file (`git format-patch --stdout`, b4 am,
    /// a lore mbox); `-` reads standard input.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["aa", "range", "comparison"])]
    pub mbox: Option<PathBuf>,
    /// An A/A comparison instead: no patch, both sides boot the base
    /// kernel. Its spread becomes the machine's noise floor, the smallest
    /// change later reports on that machine call real.
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
    /// Base tree as a source tarball the runner knows by name.
    #[arg(long, default_value = "linux-source-6.1", conflicts_with = "git")]
    pub base: String,
    /// Base tree as a git URL (with --commit, or --range).
    #[arg(long)]
    pub git: Option<String>,
    /// Commit id, tag or branch in --git.
    #[arg(long, requires = "git", conflicts_with = "range")]
    pub commit: Option<String>,
    /// Measure every commit of a git range `A..B` of --git on its own (B's
    /// first-parent commits after A, a merge as one step), on A as base;
    /// the server reads the commits from the repository.
    #[arg(long, value_name = "A..B", requires = "git", conflicts_with_all = ["mbox", "aa"])]
    pub range: Option<String>,
    /// What to measure and where.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Follow the comparison until it ends and print its text report.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: exit with status 3 when the verdict is a regression.
    #[arg(long, requires = "wait")]
    pub fail_on_regression: bool,
    /// With --wait: seconds between polls.
    #[arg(long, default_value_t = 5)]
    pub poll: u64,
}
