//! Keeps a job's lease alive from a background thread while the executor
//! works, and learns from the answers whether the comparison was cancelled
//! or the lease was lost (the server took the job back).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::agent::client::{Client, Lease};
use crate::agent::log::agent_log;

/// What the heartbeats learnt about the job; shared with the reporter.
#[derive(Debug, Default)]
pub struct JobFlags {
    /// The comparison was cancelled.
    pub cancelled: AtomicBool,
    /// The server no longer leases the job to us.
    pub lease_lost: AtomicBool,
    /// The job's kernels are ready: it reported booting or later. An agent
    /// holding several jobs claims another only when every job it holds
    /// is this far, so that it never holds jobs queued behind one
    /// preparation (jobs other machines could run).
    pub prepared: AtomicBool,
}

impl JobFlags {
    /// Whether the executor should stop.
    pub fn should_stop(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst) || self.lease_lost.load(Ordering::SeqCst)
    }
}

/// A running heartbeat thread; stopped by [`Heartbeat::stop`] or on drop.
#[derive(Debug)]
pub struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// How often to beat for a lease of `lease_seconds`: three times per lease,
/// so one lost beat does not cost the lease.
pub fn interval(lease_seconds: u32) -> Duration {
    Duration::from_secs_f64((f64::from(lease_seconds) / 3.0).max(1.0))
}

impl Heartbeat {
    /// Starts beating every `every` for `lease`.
    pub fn start(client: Client, lease: Lease, every: Duration, flags: Arc<JobFlags>) -> Heartbeat {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            loop {
                match stopped.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => beat(&client, lease, &flags),
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        });
        Heartbeat {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn beat(client: &Client, lease: Lease, flags: &JobFlags) {
    match client.heartbeat(lease) {
        Ok(answer) => {
            if answer.cancelled && !flags.cancelled.swap(true, Ordering::SeqCst) {
                agent_log!("job {}: the comparison was cancelled", lease.job_id);
            }
        }
        Err(e) if e.is_transient() => {
            agent_log!("job {}: heartbeat failed, will retry: {e}", lease.job_id);
        }
        Err(e) => {
            agent_log!("job {}: lease lost: {e}", lease.job_id);
            flags.lease_lost.store(true, Ordering::SeqCst);
        }
    }
}
