//! `patchperf-runner bench`.

use crate::Error;
use crate::cli::bench::BenchArgs;

/// Runs `patchperf-runner bench`.
pub fn run(_args: BenchArgs) -> Result<(), Error> {
    Err(Error::NotAvailable("bench"))
}
