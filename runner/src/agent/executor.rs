//! The seam between the agent loop and whatever executes a claimed job.
//!
//! The agent hands a [`JobSpec`] to a [`JobExecutor`] together with a
//! [`JobReporter`]; the executor reports each state change, uploads each run
//! as soon as it exists and returns `Ok(())` when every boot of the job ran,
//! or a [`JobFailure`] naming why not. The agent turns the return value into
//! the job's `finish` call; heartbeats run beside the executor, so it never
//! has to think about the lease.

use patchperf_common::protocol::{FailureReason, JobSpec, JobState, RunUpload};

use crate::kernel::pipeline::failure::JobFailure;

/// What an executor may tell the server while a job runs.
pub trait JobReporter {
    /// Reports a state change (`fetching`, `applying`, `building`, `booting`,
    /// `running`, `uploading`) with one line saying what happens and the last
    /// lines of the current step's output. Failing to deliver a state change
    /// is not the executor's problem: the agent logs it and carries on.
    fn state(&mut self, state: JobState, message: &str, log_tail: &str);

    /// Uploads the result of one run. When the server is unreachable the run
    /// is written to the agent's spool directory and delivered later, so an
    /// `Err` here means the result could not even be kept on disk.
    fn upload(&mut self, upload: RunUpload) -> Result<(), crate::Error>;

    /// Whether the comparison was cancelled (learnt from heartbeats); an
    /// executor should check between steps and stop early when it was.
    fn cancelled(&self) -> bool;
}

/// Executes claimed jobs: every boot of `job.boots` in order, every workload
/// of `job.workloads` in each boot, each run uploaded through `reporter`.
pub trait JobExecutor {
    /// Runs the job to the end, or fails it with a reason.
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure>;

    /// An executor for one more job run beside the ones this one runs
    /// (sharing what they must share), or none when jobs cannot run side
    /// by side (a machine that kexecs into each kernel is one job's).
    fn beside(&self) -> Option<Box<dyn JobExecutor + Send>> {
        None
    }
}

/// The executor of a runner built without the kernel pipeline: it fails
/// every job honestly, so the comparison shows why nothing was measured
/// instead of waiting for a result that never comes.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnsupportedExecutor;

/// The detail [`UnsupportedExecutor`] reports.
pub const PIPELINE_UNAVAILABLE: &str = "kernel pipeline not available in this runner build";

impl JobExecutor for UnsupportedExecutor {
    fn execute(
        &mut self,
        _job: &JobSpec,
        _reporter: &mut dyn JobReporter,
    ) -> Result<(), JobFailure> {
        Err(JobFailure::new(
            FailureReason::Unsupported,
            PIPELINE_UNAVAILABLE,
        ))
    }
}
