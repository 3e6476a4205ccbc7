//! `patchperf-runner agent`.

use crate::Error;
use crate::cli::agent::AgentArgs;

/// Runs `patchperf-runner agent`.
pub fn run(_args: AgentArgs) -> Result<(), Error> {
    Err(Error::NotAvailable("agent"))
}
