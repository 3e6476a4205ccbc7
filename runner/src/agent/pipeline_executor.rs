//! The kernel pipeline as the agent's [`JobExecutor`]: pipeline events
//! become state updates (with the step's last output lines, refreshed while
//! a long step runs) and uploads. [`KernelExecutor`] boots under QEMU;
//! [`KexecExecutor`] boots the machine itself into each kernel (bare metal),
//! one reboot per boot slot, resumed by the agent after each reboot.

use std::time::{Duration, Instant};

use patchperf_common::protocol::{BootSlot, JobSpec, JobState, RunUpload};
use patchperf_common::run::RunResult;

use crate::Error;
use crate::agent::executor::{JobExecutor, JobReporter};
use crate::kernel::pipeline::failure::{JobFailure, failure};
use crate::kernel::pipeline::kexec::{self, Kexec, KexecProgress, KexecState};
use crate::kernel::pipeline::{self, Events, Pipeline};
use crate::proc::Tail;

/// How often a long step re-sends its state with fresh log lines.
const LOG_REFRESH: Duration = Duration::from_secs(10);

/// Executes claimed jobs with the kernel pipeline.
#[derive(Debug, Clone)]
pub struct KernelExecutor {
    /// The pipeline's settings.
    pub pipeline: Pipeline,
}

impl JobExecutor for KernelExecutor {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        let mut events = ReporterEvents::new(reporter);
        pipeline::execute(&self.pipeline, job, &mut events)
    }

    /// A clone: clones share the pipeline's [`host`](pipeline::host), which
    /// decides what runs beside what.
    fn beside(&self) -> Option<Box<dyn JobExecutor + Send>> {
        Some(Box::new(self.clone()))
    }
}

/// Executes claimed jobs by kexec'ing this machine into each kernel. A call
/// either finishes the job (the boots' results are all collected), fails
/// it, or does not return: the machine reboots into the next kernel, and
/// the agent, started again in the machine's own kernel, resumes the job
/// from the state on disk ([`KexecExecutor::in_progress`]).
#[derive(Debug)]
pub struct KexecExecutor {
    /// The pipeline's settings (the cache holds the state).
    pub pipeline: Pipeline,
    /// Runs kexec (or records it, in a dry run).
    pub kexec: Kexec,
}

impl KexecExecutor {
    /// The job a previous start of the agent kexec'd away from, if any.
    pub fn in_progress(&self) -> Result<Option<JobSpec>, Error> {
        let dir = self.pipeline.cache.root().join(kexec::KEXEC_DIR);
        Ok(KexecState::load(&dir)?.map(|s| s.job))
    }
}

impl JobExecutor for KexecExecutor {
    fn execute(&mut self, job: &JobSpec, reporter: &mut dyn JobReporter) -> Result<(), JobFailure> {
        let cmdline = std::fs::read_to_string("/proc/cmdline").map_err(|e| {
            failure(
                patchperf_common::protocol::FailureReason::Other,
                "reading /proc/cmdline",
                Error::io("reading /proc/cmdline", e),
            )
        })?;
        let mut events = ReporterEvents::new(reporter);
        match kexec::kexec_step(
            &self.pipeline,
            job,
            cmdline.trim(),
            &mut self.kexec,
            &mut events,
        )? {
            KexecProgress::Finished => Ok(()),
            // Only a dry run comes back from a kexec.
            KexecProgress::Rebooting => Err(JobFailure::new(
                patchperf_common::protocol::FailureReason::BootFailed,
                "kexec did not reboot the machine (dry run)",
            )),
        }
    }
}

struct ReporterEvents<'a> {
    reporter: &'a mut dyn JobReporter,
    state: JobState,
    message: String,
    tail: Tail,
    sent: Instant,
}

impl<'a> ReporterEvents<'a> {
    fn new(reporter: &'a mut dyn JobReporter) -> Self {
        ReporterEvents {
            reporter,
            state: JobState::Claimed,
            message: String::new(),
            tail: Tail::new(30),
            sent: Instant::now(),
        }
    }
}

impl Events for ReporterEvents<'_> {
    fn state(&mut self, state: JobState, message: &str) {
        self.state = state;
        self.message = message.to_string();
        self.tail = Tail::new(30);
        self.reporter.state(state, message, "");
        self.sent = Instant::now();
    }

    fn line(&mut self, line: &str) {
        self.tail.push(line);
        if self.sent.elapsed() >= LOG_REFRESH {
            self.reporter
                .state(self.state, &self.message, &self.tail.to_string());
            self.sent = Instant::now();
        }
    }

    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error> {
        self.reporter.upload(RunUpload { boot, result })
    }

    fn cancelled(&self) -> bool {
        self.reporter.cancelled() || crate::proc::interrupted()
    }
}
