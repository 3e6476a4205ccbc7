//! The agent side of the runner protocol: the loop that registers this
//! machine with a patchperf server, claims jobs, keeps their leases alive,
//! reports progress, uploads runs and finishes jobs.
//!
//! What a job actually does (fetch, build, boot, run) is behind
//! [`executor::JobExecutor`], so the protocol and the kernel pipeline can be
//! built and tested apart.
//!
//! - [`client`]: one blocking HTTP call per protocol endpoint.
//! - [`worker`]: the loop ([`worker::Agent`]).
//! - [`beside`]: the loop holding several jobs at once.
//! - [`heartbeat`]: keeps the lease alive beside the executor.
//! - [`reporter`]: the [`executor::JobReporter`] the executor talks to.
//! - [`spool`]: results waiting on disk for an unreachable server.
//! - [`backoff`]: retrying calls that may succeed later.
//! - [`inventory`]: what this machine is.
//! - [`pipeline_executor`]: the kernel pipeline as a [`executor::JobExecutor`].

pub mod backoff;
pub mod beside;
pub mod client;
pub mod executor;
pub mod heartbeat;
pub mod inventory;
pub mod log;
pub mod pipeline_executor;
pub mod reporter;
pub mod spool;
pub mod worker;
