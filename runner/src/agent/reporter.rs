//! The agent's [`JobReporter`]: state changes go straight to the server
//! (best effort), runs are uploaded with retries and spooled to disk when
//! the server stays unreachable.

use std::sync::Arc;

use patchperf_common::protocol::{JobState, RunUpload, StateUpdate};

use crate::Error;
use crate::agent::backoff::Backoff;
use crate::agent::client::{Client, Lease};
use crate::agent::executor::JobReporter;
use crate::agent::heartbeat::JobFlags;
use crate::agent::spool::{Entry, Item, Spool};

/// Reports one job's progress and results.
#[derive(Debug)]
pub struct AgentReporter<'a> {
    /// The server.
    pub client: &'a Client,
    /// Where undeliverable results wait.
    pub spool: &'a Spool,
    /// The job's lease.
    pub lease: Lease,
    /// What the heartbeats learnt.
    pub flags: Arc<JobFlags>,
    /// Retry policy for uploads.
    pub backoff: Backoff,
}

impl JobReporter for AgentReporter<'_> {
    fn state(&mut self, state: JobState, message: &str, log_tail: &str) {
        let update = StateUpdate {
            state,
            message: message.to_string(),
            log_tail: log_tail.to_string(),
        };
        if let Err(e) = self.client.state(self.lease, &update) {
            eprintln!(
                "patchperf-runner agent: job {}: state {} not delivered: {e}",
                self.lease.job_id,
                state.as_str()
            );
        }
    }

    fn upload(&mut self, upload: RunUpload) -> Result<(), Error> {
        // Results keep their order: while older ones wait, newer ones wait
        // behind them.
        if !self.spool.is_empty() {
            if let Err(e) = self.spool.deliver(self.client) {
                eprintln!("patchperf-runner agent: spool delivery failed: {e}");
            }
        }
        if self.spool.is_empty() {
            match self
                .backoff
                .retry(|| self.client.upload(self.lease, &upload))
            {
                Ok(_) => return Ok(()),
                Err(e) if !e.is_transient() => return Err(e),
                Err(e) => eprintln!(
                    "patchperf-runner agent: job {}: upload failed ({e}); spooling to {}",
                    self.lease.job_id,
                    self.spool.dir().display()
                ),
            }
        }
        self.spool
            .push(&Entry {
                lease: self.lease,
                item: Item::Upload(Box::new(upload)),
            })
            .map(|_| ())
    }

    fn cancelled(&self) -> bool {
        self.flags.should_stop() || crate::proc::interrupted()
    }
}
