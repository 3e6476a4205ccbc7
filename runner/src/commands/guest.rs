//! `patchperf-runner guest`.

use crate::Error;
use crate::cli::guest::GuestArgs;

/// Runs `patchperf-runner guest`.
pub fn run(_args: GuestArgs) -> Result<(), Error> {
    Err(Error::NotAvailable("guest"))
}
