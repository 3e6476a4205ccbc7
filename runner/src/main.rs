//! `patchperf-runner`: parse the command line and hand it to the command.

use clap::Parser;

fn main() {
    let cli = patchperf_runner::cli::Cli::parse();
    if let Err(err) = patchperf_runner::commands::run(cli) {
        eprintln!("patchperf-runner: {err}");
        std::process::exit(err.exit_code());
    }
}
