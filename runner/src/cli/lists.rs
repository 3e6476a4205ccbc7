//! Arguments of `patchperf-runner lists`: the mailing lists a server
//! follows, listed, added, read at once, handed mail and removed from a
//! shell, instead of `curl` against the lists API.

use std::path::PathBuf;

use patchperf_common::run::MeasurementMode;

/// Arguments of `patchperf-runner lists`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 done; 2 refused (a bad command line, or the server answered \
4xx: no such list, a field it refuses, a name taken, not a ci or admin \
token); 75 the server could not be reached or answered 5xx (retry later).")]
pub struct ListsArgs {
    /// The patchperf server, e.g. http://perf.example.org:8080.
    #[arg(long, env = "PATCHPERF_SERVER", value_parser = super::server_url)]
    pub server: String,
    /// A ci token (`patchperf-server token create --kind ci`); `remove`
    /// needs an admin token. `$PATCHPERF_CI_TOKEN`, its earlier
    /// variable, still counts and wins.
    #[arg(long, env = "PATCHPERF_TOKEN", hide_env_values = true)]
    pub token: String,
    /// What to do; `list` when left out.
    #[command(subcommand)]
    pub action: Option<ListAction>,
}

/// What `lists` does.
#[derive(Debug, clap::Subcommand)]
pub enum ListAction {
    /// One line a list: its id, name, address, where its mail comes from,
    /// the messages read and when, and the last read's error.
    List,
    /// Follow a list: every series posted that touches its files is
    /// measured patch by patch and, when it moves a number, answered in
    /// its thread.
    Add(Box<AddList>),
    /// One list as the server keeps it (JSON).
    Show(Named),
    /// Read the list's archive now, as its archive's hook would ask.
    Read(Named),
    /// Hand in mail: one message (`message/rfc822`) or an mbox, from FILE
    /// or standard input (`-`), e.g. `b4 mbox MSGID -o - | … hand-in
    /// linux-fsdevel -`.
    HandIn(HandIn),
    /// Stop following a list (an admin token): its messages and series go,
    /// the comparisons made for them stay.
    Remove(Named),
}

/// A list, by its id or its name.
#[derive(Debug, clap::Args)]
pub struct Named {
    /// The list's id or name.
    pub list: String,
}

/// Mail to hand in.
#[derive(Debug, clap::Args)]
pub struct HandIn {
    /// The list's id or name.
    pub list: String,
    /// A message or an mbox; `-`: standard input.
    #[arg(default_value = "-")]
    pub file: PathBuf,
}

/// A list to follow, as `POST /api/v1/lists` takes it; what is left out
/// is the server's default.
#[derive(Debug, clap::Args)]
pub struct AddList {
    /// A short name (`linux-fsdevel`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// The list's posting address; replies are copied to it.
    #[arg(long)]
    pub address: String,
    /// Its public-inbox archive (`https://lore.kernel.org/linux-fsdevel`);
    /// without one, mail comes through `hand-in`.
    #[arg(long, value_name = "URL")]
    pub archive_url: Option<String>,
    /// Read the archive from its first message, not only what is posted
    /// from now on.
    #[arg(long)]
    pub read_history: bool,
    /// The tracked tree whose branch head is the default base.
    #[arg(long, conflicts_with = "base_url")]
    pub tree: Option<String>,
    /// Or a repository whose --base-branch is the default base.
    #[arg(long, value_name = "URL", requires = "base_branch")]
    pub base_url: Option<String>,
    /// The branch of --base-url.
    #[arg(long, value_name = "BRANCH", requires = "base_url")]
    pub base_branch: Option<String>,
    /// Globs of the files a series must touch to be measured (default:
    /// the server's, fs/ and include/linux/fs.h and the like).
    #[arg(long = "path", value_name = "GLOB", value_delimiter = ',')]
    pub paths: Vec<String>,
    /// Workloads for a series the workload map says nothing about
    /// (default: none: such a series is not measured).
    #[arg(
        short = 'w',
        long = "workload",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub workloads: Vec<String>,
    /// Boots per side.
    #[arg(long)]
    pub runs: Option<u32>,
    /// Measurement mode to insist on (tcg-icount, …).
    #[arg(long, alias = "backend", value_name = "MODE",
          value_parser = super::measure::measurement_parser())]
    pub measurement: Option<MeasurementMode>,
    /// Machine to measure on.
    #[arg(long, conflicts_with = "pool")]
    pub machine: Option<String>,
    /// Pool to measure on instead of one machine.
    #[arg(long)]
    pub pool: Option<String>,
    /// Do not copy replies to the list (0-day's default is to).
    #[arg(long)]
    pub no_cc_list: bool,
    /// Copy replies to everyone in the thread's To and Cc.
    #[arg(long)]
    pub cc_thread: bool,
    /// Answer improvements too, not only regressions.
    #[arg(long)]
    pub report_improvements: bool,
}
