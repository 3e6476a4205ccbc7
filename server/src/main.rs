//! `patchperf-server`: parse the command line (and the settings file) and
//! hand it to the command.

use std::process::ExitCode;
use std::time::Duration;

use patchperf_server::{cli, commands};

fn main() -> ExitCode {
    let cli = cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("patchperf-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async {
        commands::init_logging(cli.log_format);
        match commands::run(cli).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("patchperf-server: {e}");
                ExitCode::FAILURE
            }
        }
    });
    // Report work given up after its time limit may still be computing on a
    // blocking thread; it must not keep a stopped server from exiting.
    runtime.shutdown_timeout(Duration::from_secs(2));
    code
}
