//! The whole job, step by step: [`prepare`] (fetch → apply → configure →
//! build, both kernels), then for each boot the server ordered [`boot`]
//! (boot → run → collect) and upload; under `tcg-icount` up to
//! [`Pipeline::parallel`] guests at once ([`parallel`]), and jobs run at
//! once share the host by [`host`]'s rule; on bare metal [`kexec`] carries
//! the same steps across reboots. Each step's failure
//! becomes a [`JobFailure`] whose reason names the step; scratch trees and
//! QEMU processes never outlive the job.

pub mod boot;
pub mod failure;
pub mod host;
pub mod kexec;
pub mod parallel;
pub mod prepare;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, RunResult};

use crate::Error;
use crate::kernel::cache::Cache;
use failure::{JobFailure, failure};

/// What the pipeline tells its caller while a job runs: the agent turns
/// these into state updates and uploads, `runner job` into progress bars
/// and files.
pub trait Events {
    /// A step begins.
    fn state(&mut self, state: JobState, message: &str);
    /// One line of the current step's output (make, the guest's console).
    fn line(&mut self, line: &str);
    /// One run is done; `Err` when it could not be kept (the job fails).
    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error>;
    /// Stop at the next chance.
    fn cancelled(&self) -> bool;
}

/// How this runner executes jobs.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The cache directory.
    pub cache: Cache,
    /// The runner binary the guest runs as init (this one, normally).
    pub runner: PathBuf,
    /// Longest wait for a guest to come up; `None`: by mode.
    pub boot_limit: Option<Duration>,
    /// Longest a guest may run once up; `None`: from the runs' seconds.
    pub run_limit: Option<Duration>,
    /// Extra kernel parameters for every boot.
    pub extra_cmdline: Vec<String>,
    /// Guests run at once under `tcg-icount` (guest time counts
    /// instructions, so a guest's numbers do not depend on what else the
    /// host runs); wall-clock modes always boot one at a time.
    pub parallel: usize,
    /// What the jobs run at once with clones of this pipeline share.
    pub host: Arc<host::Host>,
    /// Ask every guest for the syscall paths of its profiled runs and
    /// keep each boot's out share (request, results, report, paths) in
    /// `<dir>/boot-<seq>/`: what `workload-map` reads; `None` for jobs.
    pub workload_paths: Option<PathBuf>,
}

impl Pipeline {
    /// The pipeline with the cache from the environment and this binary as
    /// the guest's init.
    pub fn from_env() -> Result<Pipeline, Error> {
        let runner =
            std::env::current_exe().map_err(|e| Error::io("finding the runner binary", e))?;
        Ok(Pipeline {
            cache: Cache::from_env(),
            runner,
            boot_limit: None,
            run_limit: None,
            extra_cmdline: Vec::new(),
            parallel: parallel::default_guests(),
            host: Arc::default(),
            workload_paths: None,
        })
    }
}

/// Executes `job`: builds both kernels, then every boot in `job.boots`
/// order with every workload, reporting each run through `events`.
pub fn execute(
    pipeline: &Pipeline,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<(), JobFailure> {
    let lock = pipeline
        .host
        .cache_lock(&pipeline.cache)
        .map_err(|e| failure(FailureReason::Other, "taking the cache", e))?;
    let kernels = {
        let _one_at_a_time = pipeline.host.prepare(|| {
            events.state(
                JobState::Fetching,
                "waiting: another job on this machine prepares its kernels",
            );
        });
        let _beside_guests = pipeline.host.build(|now| {
            events.state(
                JobState::Fetching,
                &format!("waiting: {now} on this machine, which run with nothing beside them"),
            );
        });
        prepare::kernels(&lock, job, events)?
    };
    let mode = boot::choose_mode(&lock, job.backend, &kernels.base)?;
    let request = boot::guest_request(job, mode);
    if parallel::applies(pipeline, mode, job.boots.len()) {
        return parallel::boot_all(pipeline, &lock, &kernels, job, mode, &request, events);
    }
    let icount = mode == MeasurementMode::TcgIcount;
    // A wall-clock job's boots share the host with nothing, from the first
    // to the last, so that all of them measure alike.
    let _alone = (!icount).then(|| {
        pipeline.host.alone(|now| {
            events.state(
                JobState::Booting,
                &format!(
                    "waiting for the machine to itself ({} measures wall-clock time): {now} \
                     of other jobs must end first",
                    mode.as_str()
                ),
            );
        })
    });
    for slot in &job.boots {
        if events.cancelled() {
            return Err(JobFailure::new(FailureReason::Cancelled, "cancelled"));
        }
        let _guest = icount.then(|| {
            parallel::guest_place(pipeline, |why| {
                events.state(JobState::Booting, &format!("boot {}: {why}", slot.seq + 1));
            })
        });
        // The wait may have been long.
        if events.cancelled() {
            return Err(JobFailure::new(FailureReason::Cancelled, "cancelled"));
        }
        let kernel = kernels.side(slot.side);
        events.state(
            JobState::Booting,
            &format!(
                "boot {}: {} ({})",
                slot.seq + 1,
                boot::kernel_name(slot.side, kernel),
                mode.as_str()
            ),
        );
        let results = boot::boot_and_run(pipeline, &lock, kernel, *slot, mode, &request, events)?;
        events.state(
            JobState::Uploading,
            &boot::uploading(results.len(), slot.seq),
        );
        for r in results {
            events
                .result(*slot, r)
                .map_err(|e| failure(FailureReason::Other, "keeping a result", e))?;
        }
    }
    Ok(())
}
