//! Command-line definitions of `patchperf-server` (clap derive): `serve`,
//! `migrate`, `token`, one file per subcommand with arguments of its own.
//! The code that runs each command lives in `crate::commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub mod serve;
pub mod token;

/// patchperf server: comparisons of kernel patches, runner protocol, CI API.
#[derive(Debug, Parser)]
#[command(name = "patchperf-server", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The server's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (and start a private Postgres when DATABASE_URL is unset).
    Serve(serve::ServeArgs),
    /// Apply the database migrations and exit.
    Migrate(DatabaseArgs),
    /// Create, list or revoke API tokens.
    Token(token::TokenArgs),
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Postgres to use; when unset, a private cluster is created and started
    /// under `<data-dir>/pg`.
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
