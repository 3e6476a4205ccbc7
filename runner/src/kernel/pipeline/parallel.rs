//! Several guests at once, where the measurement allows it. Under
//! `tcg-icount` a guest's clock counts the instructions it executed
//! (`-icount shift=0,sleep=off`), so its ops/s do not depend on what else
//! the host runs: the boots of a job may run side by side, one host CPU
//! each, and a job of two boots takes the time of one. Wall-clock modes
//! (kvm, plain tcg, kexec, host) share the host's time with whatever runs
//! beside them and always boot one guest at a time.
//!
//! The guests run on threads; everything they say comes back over a
//! channel to this thread, which alone talks to [`Events`] (the agent's
//! reporter is not shared across threads). Each boot's results are
//! reported as soon as it ends, attributed to its own boot slot; the slots
//! start in the server's planned order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, RunResult};

use super::boot;
use super::failure::{JobFailure, failure};
use super::host::Place;
use super::prepare::Kernels;
use super::{Events, Pipeline};
use crate::Error;
use crate::kernel::boot::guest_protocol::GuestRequest;
use crate::kernel::cache::CacheLock;

/// Guests at once when nothing says otherwise: one host CPU is left for
/// the runner, the uploads and the system; at least one guest.
pub fn default_guests() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// Whether `boots` boots in `mode` run side by side on `pipeline`.
pub fn applies(pipeline: &Pipeline, mode: MeasurementMode, boots: usize) -> bool {
    mode == MeasurementMode::TcgIcount && pipeline.parallel > 1 && boots > 1
}

/// What a guest's thread says.
enum Said {
    /// A step of boot `seq` began.
    State(u32, JobState, String),
    /// A line of boot `seq`'s console.
    Line(u32, String),
    /// Boot `index` (into the job's boots) ended.
    Ended(usize, Result<Vec<RunResult>, JobFailure>),
}

/// [`Events`] of one guest's thread: forwarded over the channel.
struct Relay<'a> {
    seq: u32,
    to: mpsc::Sender<Said>,
    stop: &'a AtomicBool,
}

impl Events for Relay<'_> {
    fn state(&mut self, state: JobState, message: &str) {
        let _ = self
            .to
            .send(Said::State(self.seq, state, message.to_string()));
    }

    fn line(&mut self, line: &str) {
        let _ = self.to.send(Said::Line(self.seq, line.to_string()));
    }

    fn result(&mut self, _: BootSlot, _: RunResult) -> Result<(), Error> {
        // A boot's results travel back with its end.
        Err(Error::Usage(
            "a guest thread reports results at its end".into(),
        ))
    }

    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs every boot of `job`, up to `pipeline.parallel` at once, reporting
/// through `events`; the first failure stops the others and is the job's.
pub fn boot_all(
    pipeline: &Pipeline,
    lock: &CacheLock,
    kernels: &Kernels,
    job: &JobSpec,
    mode: MeasurementMode,
    request: &GuestRequest,
    events: &mut dyn Events,
) -> Result<(), JobFailure> {
    let stop = AtomicBool::new(false);
    let (to, from) = mpsc::channel::<Said>();
    let at_once = pipeline.parallel.min(job.boots.len());
    std::thread::scope(|scope| {
        let start = |index: usize| {
            let slot: BootSlot = job.boots[index];
            let to = to.clone();
            let stop = &stop;
            scope.spawn(move || {
                let mut relay = Relay {
                    seq: slot.seq,
                    to: to.clone(),
                    stop,
                };
                let kernel = kernels.side(slot.side);
                // Other jobs' guests count against the bound too; a boot
                // that waits for a place says so, and again when it boots.
                let mut waited = false;
                let place = guest_place(pipeline, |why| {
                    waited = true;
                    relay.state(JobState::Booting, why);
                });
                if waited {
                    relay.state(JobState::Booting, &booting(slot, kernels, mode, at_once));
                }
                let ended =
                    boot::boot_and_run(pipeline, lock, kernel, slot, mode, request, &mut relay);
                // Given back before the end is told, so that the boot
                // started next finds it free.
                drop(place);
                let _ = to.send(Said::Ended(index, ended));
            });
        };
        let mut next = 0;
        while next < at_once {
            announce(events, job.boots[next], kernels, mode, at_once);
            start(next);
            next += 1;
        }
        let mut running = at_once;
        let mut outcome = Ok(());
        while running > 0 {
            let Ok(said) = from.recv() else { break };
            match said {
                Said::State(seq, state, message) => {
                    events.state(state, &format!("boot {}: {message}", seq + 1));
                }
                Said::Line(seq, line) => events.line(&format!("[boot {}] {line}", seq + 1)),
                Said::Ended(index, ended) => {
                    running -= 1;
                    let slot = job.boots[index];
                    match ended {
                        Ok(results) if outcome.is_ok() => {
                            outcome = report(events, slot, results);
                        }
                        Ok(_) => {}
                        Err(e) => {
                            if outcome.is_ok() {
                                outcome = Err(e);
                            }
                        }
                    }
                    if outcome.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    } else if next < job.boots.len() {
                        announce(events, job.boots[next], kernels, mode, at_once);
                        start(next);
                        next += 1;
                        running += 1;
                    }
                }
            }
            if events.cancelled() && outcome.is_ok() {
                stop.store(true, Ordering::Relaxed);
                outcome = Err(JobFailure::new(FailureReason::Cancelled, "cancelled"));
            }
        }
        outcome
    })
}

/// `boot 3: patched kernel (tcg-icount, 2 guests at once)`.
fn announce(
    events: &mut dyn Events,
    slot: BootSlot,
    kernels: &Kernels,
    mode: MeasurementMode,
    at_once: usize,
) {
    events.state(
        JobState::Booting,
        &format!(
            "boot {}: {}",
            slot.seq + 1,
            booting(slot, kernels, mode, at_once)
        ),
    );
}

/// One of the `--parallel` guest places the jobs of this runner share;
/// `tell` hears why a boot waits for it, when it must.
pub(super) fn guest_place<'a>(pipeline: &'a Pipeline, tell: impl FnOnce(&str)) -> Place<'a> {
    pipeline.host.guest(pipeline.parallel, |now| {
        tell(&format!(
            "waiting for a guest place ({now} run; --parallel {})",
            pipeline.parallel
        ));
    })
}

/// `patched kernel (tcg-icount, 2 guests at once)`.
fn booting(slot: BootSlot, kernels: &Kernels, mode: MeasurementMode, at_once: usize) -> String {
    format!(
        "{} ({}, {at_once} guests at once)",
        boot::kernel_name(slot.side, kernels.side(slot.side)),
        mode.as_str()
    )
}

fn report(
    events: &mut dyn Events,
    slot: BootSlot,
    results: Vec<RunResult>,
) -> Result<(), JobFailure> {
    events.state(
        JobState::Uploading,
        &boot::uploading(results.len(), slot.seq),
    );
    for r in results {
        events
            .result(slot, r)
            .map_err(|e| failure(FailureReason::Other, "keeping a result", e))?;
    }
    Ok(())
}
