//! Arguments of `patchperf-server backup`, `restore` and `prune`: the
//! data that survives.

use std::path::PathBuf;

use clap::Args;

use super::DatabaseArgs;

/// Where the git mirrors are (as `serve --git-dir`).
#[derive(Debug, Clone, Args)]
pub struct MirrorArgs {
    /// The directory `serve --git-dir` keeps the mirrors in.
    #[arg(long, env = "PATCHPERF_GIT_DIR", value_name = "DIR")]
    pub git_dir: Option<PathBuf>,
}

/// Arguments of `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Git mirrors.
    #[command(flatten)]
    pub mirrors: MirrorArgs,
    /// The backup to write (a tar: the pg_dump and a manifest naming the
    /// mirrored repositories); replaced if it exists.
    pub file: PathBuf,
}

/// Arguments of `restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Database location: an empty database (the private cluster's is
    /// created when missing).
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Git mirrors.
    #[command(flatten)]
    pub mirrors: MirrorArgs,
    /// Let a mirrored repository be on this machine (as `serve
    /// --local-git`).
    #[arg(long, env = "PATCHPERF_LOCAL_GIT")]
    pub local_git: bool,
    /// Longest one clone may take; a bare number is seconds.
    #[arg(
        long = "git-timeout",
        alias = "git-timeout-seconds",
        env = "PATCHPERF_GIT_TIMEOUT_SECONDS",
        value_name = "DURATION",
        default_value = "30m",
        value_parser = super::durations::git
    )]
    pub git_timeout: std::time::Duration,
    /// Do not clone the mirrored repositories again (the server clones
    /// each when a range or tree first needs it).
    #[arg(long)]
    pub no_clone: bool,
    /// The backup to read.
    pub file: PathBuf,
}

/// Arguments of `prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Prune comparisons finished more than this many days ago (1 or more:
    /// 0 would take every finished comparison's series at once).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=36_500))]
    pub older_than_days: u64,
    /// Say what would be pruned, and prune nothing.
    #[arg(long)]
    pub dry_run: bool,
}
