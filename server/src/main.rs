//! `patchperf-server`: parse the command line and hand it to the command.

use std::process::ExitCode;

use clap::Parser;
use patchperf_server::{cli, commands};

#[tokio::main]
async fn main() -> ExitCode {
    commands::init_logging();
    match commands::run(cli::Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("patchperf-server: {e}");
            ExitCode::FAILURE
        }
    }
}
