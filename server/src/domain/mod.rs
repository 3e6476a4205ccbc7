//! What the server does, apart from how it is asked over HTTP: the job
//! lifecycle (every state change with its event row), the queue runners
//! claim from, the interleaved boot order, more runs while undecided, why a
//! comparison waits, which kernels its jobs built, bisections, and the
//! reports built from stored runs. Uses [`crate::db`] for storage; knows
//! nothing of HTTP.

pub mod bisect;
pub mod calibrate;
pub mod comparison;
pub mod context;
pub mod deliver;
pub mod history_plot;
pub mod interleave;
pub mod jobs;
pub mod kernel_builds;
pub mod lifecycle;
pub mod machines;
pub mod more_runs;
pub mod notify;
pub mod queue;
pub mod range;
pub mod report;
pub mod steps;
pub mod submit;
pub mod tokens;
pub mod tree;
pub mod waiting;
pub mod workers;

pub use context::Context;
