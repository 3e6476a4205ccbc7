//! The agent's [`JobReporter`]: state changes go straight to the server
//! (best effort), runs are uploaded with retries and spooled to disk when
//! the server stays unreachable. Text from consoles and logs leaves here
//! without NUL characters, which the server refuses.

use std::sync::Arc;

use patchperf_common::protocol::{JobState, RunUpload, StateUpdate};

use crate::Error;
use crate::agent::backoff::Backoff;
use crate::agent::client::{Client, Lease};
use crate::agent::executor::JobReporter;
use crate::agent::heartbeat::JobFlags;
use crate::agent::log::agent_log;
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
        if matches!(
            state,
            JobState::Booting | JobState::Running | JobState::Uploading
        ) {
            self.flags
                .prepared
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let update = StateUpdate {
            state,
            message: without_nul(message),
            log_tail: without_nul(log_tail),
        };
        if let Err(e) = self.client.state(self.lease, &update) {
            agent_log!(
                "job {}: state {} not delivered: {e}",
                self.lease.job_id,
                state.as_str()
            );
        }
    }

    fn upload(&mut self, upload: RunUpload) -> Result<(), Error> {
        if self.spool.is_empty() {
            match self
                .backoff
                .retry(|| self.client.upload(self.lease, &upload))
            {
                Ok(_) => return Ok(()),
                Err(e) if !e.is_transient() => return Err(e),
                Err(e) => agent_log!(
                    "job {}: upload failed ({e}); spooling to {}",
                    self.lease.job_id,
                    self.spool.dir().display()
                ),
            }
        }
        // Results keep their order: while older ones wait, a newer one
        // waits behind them, and goes with them once the server takes them.
        let waiting = !self.spool.is_empty();
        self.spool
            .push(&Entry::new(self.lease, Item::Upload(Box::new(upload))))?;
        if waiting {
            if let Err(e) = self.spool.deliver(self.client) {
                agent_log!("spool delivery failed: {e}");
            }
        }
        Ok(())
    }

    fn cancelled(&self) -> bool {
        self.flags.should_stop() || crate::proc::interrupted()
    }
}

/// `text` with every NUL character replaced by U+FFFD. Console output is
/// read with `from_utf8_lossy`, which keeps NULs, and a serial console
/// prints them; the server stores no NUL and would refuse the whole update.
pub fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nuls_become_replacement_characters() {
        assert_eq!(without_nul("a\0b\0"), "a\u{FFFD}b\u{FFFD}");
        assert_eq!(without_nul("[    0.0] Linux"), "[    0.0] Linux");
    }
}
