//! The agent loop: deliver what the spool holds, (re)register, claim a job
//! (long-poll), execute it with heartbeats beside it, finish it; again until
//! interrupted. Server outages never end the loop: calls are retried with
//! backoff and results wait in the spool. Only a refusal that will not pass
//! by itself (a bad or revoked token, a server speaking no protocol version
//! this runner does) stops the agent. A machine an admin drained, paused or
//! retired keeps asking (the server holds each claim for its wait) and
//! says so in its log once, and again when it is resumed. The loop that
//! holds several jobs at once, [`super::beside`], is built of the same
//! parts: a [`Seat`] claims, a [`Core`] shared by the jobs' threads
//! executes and finishes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{
    self, ClaimRequest, FailureReason, FinishRequest, JobSpec, MachineInventory, PROTOCOL_VERSION,
    RegisterRequest,
};

use crate::Error;
use crate::agent::backoff::Backoff;
use crate::agent::client::{ClaimAnswer, Client, Lease};
use crate::agent::executor::JobExecutor;
use crate::agent::heartbeat::{self, Heartbeat, JobFlags};
use crate::agent::log::agent_log;
use crate::agent::reporter::{AgentReporter, without_nul};
use crate::agent::spool::{Entry, Item, Spool};
use crate::kernel::pipeline::failure::JobFailure;

/// How the agent behaves.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Machine name to register as.
    pub name: String,
    /// Spool directory.
    pub spool_dir: PathBuf,
    /// Long-poll of each claim, in seconds.
    pub wait_seconds: u32,
    /// Retry policy of uploads and finishes.
    pub backoff: Backoff,
    /// Pause after a failed claim or registration before the next try.
    pub idle_retry: Duration,
    /// Jobs held at once, each on its own thread ([`super::beside`]), when
    /// the executor can run them side by side; 1: one after another.
    pub jobs: usize,
}

/// What one [`Agent::step`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// No job within the wait.
    Idle,
    /// An admin holds the machine in this state: no job until resumed.
    Held(MachineState),
    /// The server could not be reached; nothing was claimed.
    ServerDown(String),
    /// A job was executed and finished (or its finish spooled).
    Ran {
        /// The job.
        job_id: i64,
        /// How it was finished.
        finish: FinishRequest,
    },
}

/// A runner agent talking to one server.
#[derive(Debug)]
pub struct Agent {
    pub(super) core: Core,
    pub(super) seat: Seat,
}

/// What the threads executing jobs share: the server, the options and the
/// spool.
#[derive(Debug)]
pub(super) struct Core {
    client: Client,
    pub(super) options: AgentOptions,
    spool: Spool,
}

/// This machine as the server knows it; only the claiming thread has it.
#[derive(Debug)]
pub(super) struct Seat {
    inventory: MachineInventory,
    machine_id: Option<i64>,
    /// The state the server last said the machine is in, so that a change
    /// is logged once rather than at every claim.
    state: MachineState,
}

/// What one claim came back with.
pub(super) enum Claimed {
    /// A job leased to this machine (its id).
    Job(Box<JobSpec>, i64),
    /// No job: what the turn did instead.
    Not(Step),
}

impl Agent {
    /// An agent for `client` describing this machine with `inventory`.
    pub fn new(
        client: Client,
        options: AgentOptions,
        inventory: MachineInventory,
    ) -> Result<Agent, Error> {
        let spool = Spool::open(&options.spool_dir)?;
        Ok(Agent {
            core: Core {
                client,
                options,
                spool,
            },
            seat: Seat {
                inventory,
                machine_id: None,
                state: MachineState::Active,
            },
        })
    }

    /// The spool.
    pub fn spool(&self) -> &Spool {
        &self.core.spool
    }

    /// The machine id once registered.
    pub fn machine_id(&self) -> Option<i64> {
        self.seat.machine_id
    }

    /// Registers (or updates) this machine; returns its id. A server that
    /// does not speak this runner's protocol version is refused (it refuses
    /// such a runner itself; an older one, from before versions, answers
    /// without one, which is version 1).
    pub fn register(&mut self) -> Result<i64, Error> {
        self.seat.register(&self.core)
    }

    /// Delivers what the spool holds, logging what happened.
    pub fn deliver_spool(&self) {
        self.core.deliver_spool();
    }

    /// One turn of the loop: deliver the spool, claim, execute, finish.
    /// Errors are only those that will not pass by waiting (401, 403, a
    /// spool that cannot be written).
    pub fn step(&mut self, executor: &mut dyn JobExecutor) -> Result<Step, Error> {
        self.core.deliver_spool();
        let (job, machine_id) = match self.seat.claim(&self.core)? {
            Claimed::Job(job, machine_id) => (job, machine_id),
            Claimed::Not(step) => return Ok(step),
        };
        let finish = self
            .core
            .execute(&job, machine_id, executor, Arc::default())?;
        Ok(Step::Ran {
            job_id: job.job_id,
            finish,
        })
    }

    /// Goes on with `job`, claimed by an earlier start of this agent (a
    /// kexec job whose machine rebooted): registers (waiting for the server
    /// while it is unreachable), executes with heartbeats on the same lease
    /// and finishes it. A lease that ran out while the machine rebooted
    /// shows as lost; the server then runs the job again.
    pub fn resume(&mut self, job: &JobSpec, executor: &mut dyn JobExecutor) -> Result<Step, Error> {
        let machine_id = loop {
            match self.seat.machine_id {
                Some(id) => break id,
                None => match self.register() {
                    Ok(id) => break id,
                    Err(e) if e.is_transient() => {
                        agent_log!("{e}; retrying");
                        std::thread::sleep(self.core.options.idle_retry);
                        if crate::proc::interrupted() {
                            return Err(Error::Interrupted);
                        }
                    }
                    Err(e) => return Err(e),
                },
            }
        };
        self.core.deliver_spool();
        let finish = self
            .core
            .execute(job, machine_id, executor, Arc::default())?;
        Ok(Step::Ran {
            job_id: job.job_id,
            finish,
        })
    }

    /// Runs the loop until interrupted (or after one claim with `once`);
    /// with [`AgentOptions::jobs`] above 1 and an executor that can, holds
    /// that many jobs at once ([`super::beside`]).
    pub fn run(&mut self, executor: &mut dyn JobExecutor, once: bool) -> Result<(), Error> {
        if !once && self.core.options.jobs > 1 && executor.beside().is_some() {
            return self.run_beside(executor, |_| false);
        }
        loop {
            if crate::proc::interrupted() {
                return Err(Error::Interrupted);
            }
            match self.step(executor)? {
                Step::Ran { job_id, finish } => log_finish(job_id, &finish),
                Step::Idle | Step::Held(_) => {}
                // One try asked for: the server being down is its answer
                // (exit 75, try again later), not a success.
                Step::ServerDown(why) if once => return Err(Error::Unreachable(why)),
                Step::ServerDown(why) => {
                    agent_log!(
                        "{why}; retrying in {} s",
                        self.core.options.idle_retry.as_secs()
                    );
                    std::thread::sleep(self.core.options.idle_retry);
                }
            }
            if once {
                self.core.deliver_spool();
                return Ok(());
            }
        }
    }
}

/// `job 7 done`, `job 7 failed (boot-failed): …`.
pub(super) fn log_finish(job_id: i64, finish: &FinishRequest) {
    let outcome = match finish {
        FinishRequest::Done { .. } => "done".to_string(),
        FinishRequest::Failed { reason, detail, .. } => {
            format!("failed ({}): {detail}", reason.as_str())
        }
    };
    agent_log!("job {job_id} {outcome}");
}

impl Seat {
    fn register(&mut self, core: &Core) -> Result<i64, Error> {
        let req = RegisterRequest {
            name: core.options.name.clone(),
            inventory: self.inventory.clone(),
            protocol_version: PROTOCOL_VERSION,
        };
        let answer = core.client.register(&req)?;
        if let Some(why) =
            protocol::server_refused(answer.oldest_protocol_version, answer.protocol_version)
        {
            return Err(Error::Incompatible(format!(
                "{why} (server {})",
                core.client.base()
            )));
        }
        self.machine_id = Some(answer.machine_id);
        self.note_state(answer.state);
        Ok(answer.machine_id)
    }

    /// Logs a change of the state the server holds this machine in.
    fn note_state(&mut self, state: MachineState) {
        if state == self.state {
            return;
        }
        if state.claims() {
            agent_log!("the server lets this machine claim again ({state})");
        } else {
            agent_log!("not claiming: {} ({state})", state.explain());
        }
        self.state = state;
    }

    /// (Registers if need be and) claims the next job, waiting the
    /// options' long-poll for one. Errors are only those that will not
    /// pass by waiting.
    pub(super) fn claim(&mut self, core: &Core) -> Result<Claimed, Error> {
        let machine_id = match self.machine_id {
            Some(id) => id,
            None => match self.register(core) {
                Ok(id) => id,
                Err(e) if e.is_transient() => {
                    return Ok(Claimed::Not(Step::ServerDown(e.to_string())));
                }
                Err(e) => return Err(e),
            },
        };
        let claim = ClaimRequest {
            machine_id,
            wait_seconds: core.options.wait_seconds,
        };
        match core.client.claim(&claim) {
            Ok(ClaimAnswer::Job(job)) => {
                self.note_state(MachineState::Active);
                Ok(Claimed::Job(job, machine_id))
            }
            Ok(ClaimAnswer::Nothing) => {
                self.note_state(MachineState::Active);
                Ok(Claimed::Not(Step::Idle))
            }
            Ok(ClaimAnswer::Held(state)) => {
                self.note_state(state);
                Ok(Claimed::Not(Step::Held(state)))
            }
            Err(e) if e.is_transient() => Ok(Claimed::Not(Step::ServerDown(e.to_string()))),
            // The server forgot the machine (a new database): register again.
            Err(Error::Server { status: 404, .. }) => {
                self.machine_id = None;
                Ok(Claimed::Not(Step::Idle))
            }
            Err(e) => Err(e),
        }
    }
}

impl Core {
    /// Delivers what the spool holds, logging what happened.
    pub(super) fn deliver_spool(&self) {
        if self.spool.is_empty() {
            return;
        }
        match self.spool.deliver(&self.client) {
            Ok(d) => agent_log!(
                "spool: {} delivered, {} refused (moved to rejected/), \
                 {} still waiting ({} of them passed over: the server keeps failing on them)",
                d.delivered,
                d.rejected,
                d.remaining,
                d.passed_over
            ),
            Err(e) => agent_log!("spool: {e}"),
        }
    }

    /// Executes a claimed job with heartbeats beside it and finishes it.
    pub(super) fn execute(
        &self,
        job: &JobSpec,
        machine_id: i64,
        executor: &mut dyn JobExecutor,
        flags: Arc<JobFlags>,
    ) -> Result<FinishRequest, Error> {
        let lease = Lease {
            job_id: job.job_id,
            machine_id,
            attempt: job.attempt,
        };
        agent_log!(
            "job {} (comparison {}, attempt {}): {} boots",
            job.job_id,
            job.comparison_id,
            job.attempt,
            job.boots.len()
        );
        let beat = Heartbeat::start(
            self.client.clone(),
            lease,
            heartbeat::interval(job.lease_seconds),
            flags.clone(),
        );
        let mut reporter = AgentReporter {
            client: &self.client,
            spool: &self.spool,
            lease,
            flags: flags.clone(),
            backoff: self.options.backoff,
        };
        // A bug that panics on one job (a parser meeting what it never
        // met) fails that job, not the agent and the jobs beside it.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            executor.execute(job, &mut reporter)
        }))
        .unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(JobFailure::new(
                FailureReason::Other,
                format!("the runner panicked: {why}"),
            ))
        });
        beat.stop();

        let finish = match outcome {
            Ok(()) => FinishRequest::Done {
                log_tail: String::new(),
            },
            Err(f) if flags.cancelled.load(std::sync::atomic::Ordering::SeqCst) => {
                FinishRequest::Failed {
                    reason: FailureReason::Cancelled,
                    detail: without_nul(&format!("comparison cancelled; stopped at: {}", f.detail)),
                    log_tail: without_nul(&f.log_tail),
                }
            }
            Err(f) => FinishRequest::Failed {
                reason: f.reason,
                detail: without_nul(&f.detail),
                log_tail: without_nul(&f.log_tail),
            },
        };
        if flags.lease_lost.load(std::sync::atomic::Ordering::SeqCst) {
            agent_log!("job {}: lease lost; the server runs it again", job.job_id);
            return Ok(finish);
        }
        self.finish(lease, finish)
    }

    /// Sends the finish after every result spooled before it; a `done` the
    /// server refuses because runs are missing becomes `failed (no
    /// results)`, so the job never stays claimed.
    fn finish(&self, lease: Lease, finish: FinishRequest) -> Result<FinishRequest, Error> {
        self.deliver_spool();
        if !self.spool.is_empty() {
            self.spool_finish(lease, &finish)?;
            return Ok(finish);
        }
        match self
            .options
            .backoff
            .retry(|| self.client.finish(lease, &finish))
        {
            Ok(()) => Ok(finish),
            Err(e) if e.is_transient() => {
                agent_log!("job {}: finish not delivered ({e}); spooled", lease.job_id);
                self.spool_finish(lease, &finish)?;
                Ok(finish)
            }
            Err(Error::Server {
                status: 422,
                message,
            }) if matches!(finish, FinishRequest::Done { .. }) => {
                let failed = FinishRequest::Failed {
                    reason: FailureReason::NoResults,
                    detail: message,
                    log_tail: String::new(),
                };
                self.finish(lease, failed)
            }
            Err(e) => {
                agent_log!("job {}: server refused the finish: {e}", lease.job_id);
                Ok(finish)
            }
        }
    }

    fn spool_finish(&self, lease: Lease, finish: &FinishRequest) -> Result<(), Error> {
        self.spool
            .push(&Entry::new(lease, Item::Finish(finish.clone())))
            .map(|_| ())
    }
}
