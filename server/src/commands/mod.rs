//! The code behind each `patchperf-server` subcommand, one module each; the
//! arguments are defined in `crate::cli`.

use tracing_subscriber::EnvFilter;

use crate::Error;
use crate::cli::{Cli, Command, LogFormat};

pub mod backup;
pub mod database;
pub mod migrate;
pub mod prune;
pub mod serve;
pub mod token;

/// Logs to stderr, `info` unless `RUST_LOG` says otherwise: as text (in
/// colour on a terminal) or as JSON, where each line carries the fields of
/// the span it was logged in (an HTTP request's `id`, method and path).
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
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
