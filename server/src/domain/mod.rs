//! What the server does, apart from how it is asked over HTTP: the job
//! lifecycle (every state change with its event row), the queue runners
//! claim from, the interleaved boot order, more runs while undecided, why a
//! comparison waits, which kernels its jobs built, bisections, the
//! reports built from stored runs, and what is pruned of old ones. Uses [`crate::db`] for storage; knows
//! nothing of HTTP.

pub mod bisection;
pub mod calibrate;
pub mod changes;
pub mod comparison;
pub mod context;
pub mod deliver;
pub mod history_plot;
pub mod interleave;
pub mod jobs;
pub mod kernel_builds;
pub mod lifecycle;
pub mod lists;
pub mod machines;
pub mod more_runs;
pub mod notify;
pub mod queue;
pub mod range;
pub mod report;
pub mod report_cache;
pub mod retention;
pub mod run_length;
pub mod steps;
pub mod submit;
pub mod telemetry;
pub mod tokens;
pub mod tree;
pub mod waiting;
pub mod worker_health;
pub mod workers;

pub use context::Context;
