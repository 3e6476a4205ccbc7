//! The hook through which measurement tools (perf stat, perf record, …)
//! watch the measured window of a run. The harness calls them; it does not
//! know what they measure.

use patchperf_common::run::RunResult;

use crate::Error;

/// Watches the measured window of a run (perf stat, perf record, …).
pub trait Collector {
    /// Short name used in warnings (`perf-stat`, `perf-profile`).
    fn name(&self) -> &str;
    /// Called when warm-up is over and the measured seconds begin (all tasks running).
    fn start(&mut self) -> Result<(), Error>;
    /// Called when the measured seconds end, before tasks are stopped; may add metrics,
    /// series, unsupported names and warnings to the run (will-it-scale metrics already present).
    fn finish(&mut self, result: &mut RunResult) -> Result<(), Error>;
}
