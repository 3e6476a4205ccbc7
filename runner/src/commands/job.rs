//! `patchperf-runner job`.

use crate::Error;
use crate::cli::job::JobArgs;

/// Runs `patchperf-runner job`.
pub fn run(_args: JobArgs) -> Result<(), Error> {
    Err(Error::NotAvailable("job"))
}
