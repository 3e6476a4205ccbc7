//! The agent holding several jobs at once (`agent --parallel N` on a
//! machine that measures in `tcg-icount`): while fewer than
//! [`AgentOptions::jobs`](super::worker::AgentOptions::jobs) are in hand it
//! claims another, and each claimed job runs on its own thread with its own
//! heartbeat, reporter and lease, through an executor the first one hands
//! out ([`JobExecutor::beside`]). It claims another only once every job it
//! holds has its kernels ready: preparation goes one job at a time, and a
//! job waiting for it would be kept from machines that could run it now.
//! What may run beside what (guests, builds, a wall-clock job's boots
//! alone) is the executor's rule, not this loop's.
//!
//! The server hands a machine one job of a comparison at a time (a
//! comparison's jobs and a series' steps go in order), so the jobs held at
//! once are other comparisons'.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::FinishRequest;

use super::executor::JobExecutor;
use super::heartbeat::JobFlags;
use super::log::agent_log;
use super::worker::{Agent, Claimed, Step, log_finish};
use crate::Error;

/// What a job's thread ends with: the job, and its finish or an error
/// that will not pass by waiting.
type Ended = (i64, Result<FinishRequest, Error>);

/// What [`Agent::run_beside`] tells its caller after a turn.
#[derive(Debug)]
pub enum Turn<'a> {
    /// A claim came back without a job.
    Idle {
        /// Jobs still running.
        in_hand: usize,
    },
    /// The server could not be reached (the claim is tried again).
    ServerDown(&'a str),
    /// An admin holds the machine in this state.
    Held(MachineState),
    /// A job ended and was finished (or its finish spooled).
    Ended {
        /// The job.
        job_id: i64,
        /// How.
        finish: &'a FinishRequest,
    },
}

/// How often the loop looks again while a job it holds still prepares.
const PREPARING_POLL: Duration = Duration::from_millis(500);

impl Agent {
    /// Runs the loop holding up to the options' `jobs` at once, until
    /// interrupted or `enough` says so after a turn; then the jobs in hand
    /// end before it returns. Another job is claimed only once every job
    /// held has its kernels ready (preparation goes one job at a time, so
    /// a second job waiting for it would only be kept from other
    /// machines). An error that will not pass by waiting (a revoked token,
    /// a spool that cannot be written, a panic outside the executor)
    /// stops the claims too, and is returned once the jobs in hand ended.
    pub fn run_beside(
        &mut self,
        executor: &dyn JobExecutor,
        mut enough: impl FnMut(Turn<'_>) -> bool,
    ) -> Result<(), Error> {
        let jobs = self.core.options.jobs.max(1);
        let (core, seat) = (&self.core, &mut self.seat);
        let (ended_to, ended) = mpsc::channel::<Ended>();
        std::thread::scope(|scope| {
            // The jobs in hand, with what their reporters learnt.
            let mut held: Vec<(i64, Arc<JobFlags>)> = Vec::new();
            let mut stop: Option<Result<(), Error>> = None;
            loop {
                while let Ok(e) = ended.try_recv() {
                    take(e, &mut held, &mut enough, &mut stop);
                }
                if stop.is_none() && crate::proc::interrupted() {
                    stop = Some(Err(Error::Interrupted));
                }
                let preparing = held.iter().any(|(_, f)| !f.prepared.load(Ordering::SeqCst));
                if stop.is_some() || held.len() == jobs || preparing {
                    if held.is_empty() {
                        break;
                    }
                    // Every job's thread sends its end, a panic's included.
                    if let Ok(e) = ended.recv_timeout(PREPARING_POLL) {
                        take(e, &mut held, &mut enough, &mut stop);
                    }
                    continue;
                }
                // The job's executor first: a job claimed must run.
                let Some(mut next) = executor.beside() else {
                    stop = Some(Err(Error::Usage(
                        "the executor stopped running jobs side by side".into(),
                    )));
                    continue;
                };
                core.deliver_spool();
                match seat.claim(core) {
                    Ok(Claimed::Job(job, machine_id)) => {
                        let flags = Arc::new(JobFlags::default());
                        held.push((job.job_id, flags.clone()));
                        let ended_to = ended_to.clone();
                        scope.spawn(move || {
                            let run = AssertUnwindSafe(|| {
                                core.execute(&job, machine_id, next.as_mut(), flags)
                            });
                            // A panic in the executor fails the job inside
                            // `execute`; one around it (heartbeat, finish)
                            // still ends the job here, so the loop never
                            // waits for it.
                            let end = std::panic::catch_unwind(run).unwrap_or_else(|_| {
                                Err(Error::Job {
                                    reason: "agent panic".into(),
                                    detail: format!(
                                        "job {}: the agent panicked outside the executor",
                                        job.job_id
                                    ),
                                    log_tail: String::new(),
                                })
                            });
                            let _ = ended_to.send((job.job_id, end));
                        });
                    }
                    Ok(Claimed::Not(Step::ServerDown(why))) => {
                        agent_log!("{why}; retrying in {} s", core.options.idle_retry.as_secs());
                        if enough(Turn::ServerDown(&why)) {
                            stop.get_or_insert(Ok(()));
                            continue;
                        }
                        std::thread::sleep(core.options.idle_retry);
                    }
                    Ok(Claimed::Not(Step::Held(state))) => {
                        if enough(Turn::Held(state)) {
                            stop.get_or_insert(Ok(()));
                        }
                    }
                    Ok(Claimed::Not(_)) => {
                        // Ends that came during the claim's wait go first.
                        while let Ok(e) = ended.try_recv() {
                            take(e, &mut held, &mut enough, &mut stop);
                        }
                        if enough(Turn::Idle {
                            in_hand: held.len(),
                        }) {
                            stop.get_or_insert(Ok(()));
                        }
                    }
                    Err(e) => {
                        stop = Some(Err(e));
                    }
                }
            }
            stop.unwrap_or(Ok(()))
        })
    }
}

/// What a job's end does to the loop: the job leaves `held`, its end is
/// logged and told, and a stop comes when `enough` says so or the job's
/// thread failed for good.
fn take(
    (job_id, end): Ended,
    held: &mut Vec<(i64, Arc<JobFlags>)>,
    enough: &mut impl FnMut(Turn<'_>) -> bool,
    stop: &mut Option<Result<(), Error>>,
) {
    held.retain(|(id, _)| *id != job_id);
    match end {
        Ok(finish) => {
            log_finish(job_id, &finish);
            if enough(Turn::Ended {
                job_id,
                finish: &finish,
            }) {
                stop.get_or_insert(Ok(()));
            }
        }
        Err(e) => {
            agent_log!("job {job_id}: {e}; claiming nothing more");
            stop.get_or_insert(Err(e));
        }
    }
}
