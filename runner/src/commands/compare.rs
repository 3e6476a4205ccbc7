//! `patchperf-runner compare`.

use crate::Error;
use crate::cli::compare::CompareArgs;

/// Runs `patchperf-runner compare`.
pub fn run(_args: CompareArgs) -> Result<(), Error> {
    Err(Error::NotAvailable("compare"))
}
