//! The command line of `patchperf-server`: `serve`, `migrate`, `token`.
//! Definitions here, each command's code in its own module.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::Error;
use crate::auth::TokenKind;

pub mod database;
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
    Serve(ServeArgs),
    /// Apply the database migrations and exit.
    Migrate(DatabaseArgs),
    /// Create, list or revoke API tokens.
    Token(TokenArgs),
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

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Address to listen on.
    #[arg(long, env = "PATCHPERF_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Seconds a claim or heartbeat keeps a job leased.
    #[arg(long, default_value_t = 120)]
    pub lease_seconds: u64,
    /// Claims per job before a lease that runs out fails it.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    /// Largest request body in bytes (an mbox or a run upload).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub body_limit: usize,
    /// Absolute URL of this server for links in answers (e.g.
    /// https://perf.example.org); links are relative when unset.
    #[arg(long, env = "PATCHPERF_PUBLIC_URL")]
    pub public_url: Option<String>,
}

/// Arguments of `token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Database location.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// What to do with tokens.
    #[command(subcommand)]
    pub action: TokenAction,
}

/// `token` subcommands.
#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Create a token and print it (only its hash is stored: this is the
    /// only time it is shown).
    Create {
        /// runner (lab machines), ci (submitting), admin (everything).
        #[arg(long, value_enum)]
        kind: TokenKind,
        /// Who or what will use it.
        #[arg(long)]
        name: String,
    },
    /// List tokens (never their text).
    List,
    /// Revoke a token by id.
    Revoke {
        /// Token id from `token list`.
        id: i64,
    },
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Migrate(db) => {
            let database = database::Database::open(&db).await?;
            database.close().await;
            Ok(())
        }
        Command::Token(args) => token::run(args).await,
    }
}
