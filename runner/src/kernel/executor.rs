//! The kernel pipeline as the agent's [`JobExecutor`]: pipeline events
//! become state updates (with the step's last output lines, refreshed while
//! a long step runs) and uploads.

use std::time::{Duration, Instant};

use patchperf_common::protocol::{BootSlot, JobSpec, JobState, RunUpload};
use patchperf_common::run::RunResult;

use crate::Error;
use crate::agent::executor::{JobExecutor, JobFailure, JobReporter};
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
        let mut events = ReporterEvents {
            reporter,
            state: JobState::Claimed,
            message: String::new(),
            tail: Tail::new(30),
            sent: Instant::now(),
        };
        pipeline::execute(&self.pipeline, job, &mut events)
    }
}

struct ReporterEvents<'a> {
    reporter: &'a mut dyn JobReporter,
    state: JobState,
    message: String,
    tail: Tail,
    sent: Instant,
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
