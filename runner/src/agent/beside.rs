//! The agent holding several jobs at once (`agent --parallel N` on a
//! machine that measures in `tcg-icount`): while fewer than
//! [`AgentOptions::jobs`](super::worker::AgentOptions::jobs) are in hand it
//! claims another, and each claimed job runs on its own thread with its own
//! heartbeat, reporter and lease, through an executor the first one hands
//! out ([`JobExecutor::beside`]). What may run beside what (guests, builds,
//! a wall-clock job's boots alone) is the executor's rule, not this loop's.
//!
//! The server hands a machine one job of a comparison at a time (a
//! comparison's jobs and a series' steps go in order), so the jobs held at
//! once are other comparisons'.

use std::sync::mpsc;

use patchperf_common::protocol::FinishRequest;

use super::executor::JobExecutor;
use super::log::agent_log;
use super::worker::{Agent, Claimed, Step, log_finish};
use crate::Error;

/// What a job's thread ends with.
type Ended = Result<(i64, FinishRequest), Error>;

/// What [`Agent::run_beside`] tells its caller after a turn.
#[derive(Debug)]
pub enum Turn<'a> {
    /// A claim came back without a job.
    Idle {
        /// Jobs still running.
        in_hand: usize,
    },
    /// A job ended and was finished (or its finish spooled).
    Ended {
        /// The job.
        job_id: i64,
        /// How.
        finish: &'a FinishRequest,
    },
}

impl Agent {
    /// Runs the loop holding up to the options' `jobs` at once, until
    /// interrupted or `enough` says so after a turn; then the jobs in hand
    /// end before it returns. An error that will not pass by waiting (a
    /// revoked token, a spool that cannot be written) stops the claims
    /// too, and is returned once the jobs in hand ended.
    pub fn run_beside(
        &mut self,
        executor: &dyn JobExecutor,
        mut enough: impl FnMut(Turn<'_>) -> bool,
    ) -> Result<(), Error> {
        let jobs = self.core.options.jobs.max(1);
        let (core, seat) = (&self.core, &mut self.seat);
        let (ended_to, ended) = mpsc::channel::<Ended>();
        std::thread::scope(|scope| {
            let mut in_hand = 0usize;
            let mut stop: Option<Result<(), Error>> = None;
            loop {
                while let Ok(end) = ended.try_recv() {
                    in_hand -= 1;
                    take(end, &mut enough, &mut stop);
                }
                if stop.is_none() && crate::proc::interrupted() {
                    stop = Some(Err(Error::Interrupted));
                }
                if stop.is_some() || in_hand == jobs {
                    if in_hand == 0 {
                        break;
                    }
                    // A job's thread always sends its end.
                    if let Ok(end) = ended.recv() {
                        in_hand -= 1;
                        take(end, &mut enough, &mut stop);
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
                        in_hand += 1;
                        let ended_to = ended_to.clone();
                        scope.spawn(move || {
                            let end = core
                                .execute(&job, machine_id, next.as_mut())
                                .map(|finish| (job.job_id, finish));
                            let _ = ended_to.send(end);
                        });
                    }
                    Ok(Claimed::Not(Step::ServerDown(why))) => {
                        agent_log!("{why}; retrying in {} s", core.options.idle_retry.as_secs());
                        std::thread::sleep(core.options.idle_retry);
                    }
                    Ok(Claimed::Not(Step::Idle)) => {
                        // Ends that came during the claim's wait go first.
                        while let Ok(end) = ended.try_recv() {
                            in_hand -= 1;
                            take(end, &mut enough, &mut stop);
                        }
                        if enough(Turn::Idle { in_hand }) {
                            stop.get_or_insert(Ok(()));
                        }
                    }
                    Ok(Claimed::Not(_)) => {}
                    Err(e) => {
                        stop = Some(Err(e));
                    }
                }
            }
            stop.unwrap_or(Ok(()))
        })
    }
}

/// What a job's end does to the loop: logged, told, and a stop when
/// `enough` says so or the job's thread failed for good.
fn take(
    end: Ended,
    enough: &mut impl FnMut(Turn<'_>) -> bool,
    stop: &mut Option<Result<(), Error>>,
) {
    match end {
        Ok((job_id, finish)) => {
            log_finish(job_id, &finish);
            if enough(Turn::Ended {
                job_id,
                finish: &finish,
            }) {
                stop.get_or_insert(Ok(()));
            }
        }
        Err(e) => {
            agent_log!("{e}; claiming nothing more");
            stop.get_or_insert(Err(e));
        }
    }
}
