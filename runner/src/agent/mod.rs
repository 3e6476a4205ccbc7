//! The agent side of the runner protocol: the loop that registers this
//! machine with a patchperf server, claims jobs, keeps their leases alive,
//! reports progress, uploads runs and finishes jobs.
//!
//! What a job actually does (fetch, build, boot, run) is behind
//! [`executor::JobExecutor`], so the protocol and the kernel pipeline can be
//! built and tested apart.

pub mod executor;
