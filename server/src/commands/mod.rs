//! The code behind each `patchperf-server` subcommand, one module each; the
//! arguments are defined in `crate::cli`.

use tracing_subscriber::EnvFilter;

use crate::Error;
use crate::cli::{Cli, Command};

pub mod backup;
pub mod database;
pub mod migrate;
pub mod prune;
pub mod serve;
pub mod token;

/// Logs to stderr, `info` unless `RUST_LOG` says otherwise, in colour on a
/// terminal.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

/// Dispatches a parsed command line.
pub async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Migrate(args) => migrate::run(args).await,
        Command::Token(args) => token::run(args).await,
        Command::Backup(args) => backup::backup(args).await,
        Command::Restore(args) => backup::restore(args).await,
        Command::Prune(args) => prune::run(args).await,
    }
}
