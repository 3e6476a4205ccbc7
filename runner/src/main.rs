//! `patchperf-runner`: parse the command line (and the agent's settings
//! file) and hand it to the command.

fn main() {
    let cli = patchperf_runner::cli::parse();
    if let Err(err) = patchperf_runner::commands::run(cli) {
        eprintln!("patchperf-runner: {err}");
        std::process::exit(err.exit_code());
    }
}
