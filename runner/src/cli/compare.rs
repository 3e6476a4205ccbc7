//! Arguments of `patchperf-runner compare`.

use std::path::PathBuf;

/// Arguments of `patchperf-runner compare`: two local results directories
/// (each a directory of RunResult JSON files, as `bench --json` writes them).
#[derive(Debug, clap::Args)]
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
    /// The machine's noise floor in percent (from A/A comparisons): smaller
    /// relative changes do not count as changes (default threshold 1%).
    #[arg(long, value_name = "PERCENT")]
    pub noise_floor: Option<f64>,
}
