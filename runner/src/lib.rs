//! The patchperf runner: the agent that takes jobs from the server, the kernel
//! pipeline that builds and boots base and patched kernels, the
//! will-it-scale-style workload harness and the perf collectors. Also usable alone by a kernel
//! developer (`bench`, `job`, `compare`).

pub mod agent;
pub mod cli;
pub mod commands;
pub mod error;
pub mod harness;
pub mod kernel;
pub mod perf;
pub mod proc;

pub use error::Error;
