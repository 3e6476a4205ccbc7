//! Arguments of `patchperf-runner track`: have a server follow a branch.

use super::measure::MeasureArgs;

/// Arguments of `patchperf-runner track`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Prints the tree's id, the head it starts from and its page. From then on the \
server measures every new head of the branch against the last one it tested \
(it looks every few minutes; `POST /api/v1/trees/{id}/push` from a forge or CI \
makes it look at once), keeps each metric's history, and mails a change point \
to the author of the commit that made it, Cc --cc.")]
pub struct TrackArgs {
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// A CI or admin token (`patchperf-server token create --kind ci`);
    /// `$PATCHPERF_CI_TOKEN`, its earlier variable, still counts and wins.
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The tree's name on the server (letters, digits, `.`, `_`, `-`), as
    /// 0-day names a branch: `vfs.all` (formerly `--name`).
    #[arg(long = "tree", alias = "name", value_name = "NAME")]
    pub name: String,
    /// The git repository.
    #[arg(long)]
    pub git: String,
    /// The branch to follow.
    #[arg(long)]
    pub branch: String,
    /// At most one test every this many hours (0: every new head).
    #[arg(long, default_value_t = 0)]
    pub min_hours: u32,
    /// Who else is mailed a change point (comma list): the list, the
    /// maintainer.
    #[arg(long, value_delimiter = ',')]
    pub cc: Vec<String>,
    /// Where each change point is also POSTed as JSON.
    #[arg(long)]
    pub webhook: Option<String>,
    /// What to measure and where.
    #[command(flatten)]
    pub measure: MeasureArgs,
}
