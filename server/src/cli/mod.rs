//! Command-line definitions of `patchperf-server` (clap derive): `serve`,
//! `migrate`, `token`, `backup`, `restore`, `prune`, one file per
//! subcommand (or group) with arguments of its own,
//! and the settings file read beside them ([`parse`]). The code that runs
//! each command lives in `crate::commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use patchperf_common::settings::{self, Failure, Program};

pub mod backup;
mod durations;
pub mod serve;
pub mod token;

/// patchperf server: comparisons of kernel patches, runner protocol, CI API.
#[derive(Debug, Parser)]
#[command(name = "patchperf-server", version, about)]
pub struct Cli {
    /// Settings file (TOML): `serve`'s flags by their long names, e.g.
    /// `listen = "0.0.0.0:8080"`; flags and environment variables win
    /// over it. Default: /etc/patchperf/server.toml when it exists.
    #[arg(long, global = true, env = "PATCHPERF_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How log lines are written to stderr: `text` for people, `json` for
    /// a log collector (one object a line, with the HTTP request's id and
    /// route on every line logged while answering it).
    #[arg(
        long,
        global = true,
        env = "PATCHPERF_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// How the server writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people, in colour on a terminal.
    Text,
    /// One JSON object a line.
    Json,
}

/// The settings file read when `--config` names none, if it exists.
pub const DEFAULT_CONFIG: &str = "/etc/patchperf/server.toml";

/// Which subcommands read the settings file: those that open the
/// database take its place from it.
pub const SETTINGS: Program<'static> = Program {
    keys_of: "serve",
    readers: &["serve", "migrate", "token", "backup", "restore", "prune"],
    default_path: DEFAULT_CONFIG,
};

/// This process's command line with the settings file's values where no
/// flag or environment variable gave one; on a bad command line or file,
/// says why and exits (status 2), as clap does.
pub fn parse() -> Cli {
    let args = std::env::args_os().collect();
    match settings::parse_command_line(args, &SETTINGS, |p| std::fs::File::open(p)) {
        Ok(cli) => cli,
        Err(Failure::Usage(e)) => e.exit(),
        Err(Failure::File(why)) => {
            eprintln!("patchperf-server: {why}");
            std::process::exit(2)
        }
    }
}

/// The server's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (and start a private Postgres when DATABASE_URL is unset).
    Serve(serve::ServeArgs),
    /// Apply the database migrations and exit.
    Migrate(MigrateArgs),
    /// Create, list or revoke API tokens.
    Token(token::TokenArgs),
    /// Write the database (pg_dump) and the list of mirrored repositories
    /// to one file.
    Backup(backup::BackupArgs),
    /// Load a backup into an empty database and clone its repositories
    /// again.
    Restore(backup::RestoreArgs),
    /// Remove the per-second series, perf-profile values and samples of
    /// comparisons finished long ago (their reports and verdicts stay).
    Prune(backup::PruneArgs),
}

/// Arguments of `migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// List each migration with whether the database has it; apply
    /// nothing.
    #[arg(long)]
    pub status: bool,
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Postgres to use; when unset, the private cluster under
    /// `<data-dir>/pg`, started if stopped: `serve` and `restore` create it
    /// when missing, every other command refuses to (an admin command run
    /// in the wrong directory must not make an empty lab).
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory for the server's own data (the private Postgres cluster).
    #[arg(
        long,
        global = true,
        env = "PATCHPERF_DATA_DIR",
        default_value = ".data"
    )]
    pub data_dir: PathBuf,
}
