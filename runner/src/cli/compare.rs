//! Arguments of `patchperf-runner compare`.

use std::path::PathBuf;

/// Arguments of `patchperf-runner compare`: two local results directories
/// (each a directory of RunResult JSON files, as `bench --json` writes them).
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit status: 0 the reports were printed (with --fail-on-regression: and \
none is a regression); 2 refused (a bad command line, an unreadable or \
empty directory, nothing in common); 3 a report's headline is a \
regression, with --fail-on-regression.")]
pub struct CompareArgs {
    /// Results of the base kernel.
    pub base_dir: PathBuf,
    /// Results of the patched kernel.
    pub patched_dir: PathBuf,
    /// Machine name for the report header.
    #[arg(long, default_value = "localhost")]
    pub machine: String,
    /// Show every metric, not only will-it-scale and changed ones.
    #[arg(long)]
    pub all: bool,
    /// The machine's noise floor for these runs: the ± bound in percent an
    /// A/A comparison of the same kind measured (the server's machine page
    /// shows it). δ, the smallest change called real, is then twice it, at
    /// least the measurement mode's minimum δ (0.1% tcg-icount, 1% otherwise);
    /// without it δ is the mode's default (0.5% tcg-icount, 1% otherwise),
    /// as on the server.
    #[arg(long, value_name = "PERCENT")]
    pub noise_floor: Option<f64>,
    /// Exit with status 3 when a report's headline verdict is a
    /// regression (the reports are printed first), for CI scripts.
    #[arg(long)]
    pub fail_on_regression: bool,
}
