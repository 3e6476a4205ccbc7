//! What the server does, apart from how it is asked over HTTP, one folder
//! per concept: a [`comparison`] created, named and viewed (and what asks
//! for one: a submission, a git range, a per-patch series); the [`jobs`]
//! its boots run as (the queue runners claim from, every state change, the
//! boot order, more runs while undecided, why one waits); [`calibration`]
//! (noise floors, δ, the A/A before a machine's first A/B); the [`report`]
//! built from stored runs; tracked trees ([`tree`]: heads, histories,
//! change points); mailing [`lists`]; [`bisection`]; runner [`machines`];
//! the [`outbox`] that tells people; and the [`context`] every function
//! takes, with the background workers' one shape. Uses [`crate::db`] for
//! storage; knows nothing of HTTP.

pub mod bisection;
pub mod calibration;
pub mod comparison;
pub mod context;
pub mod jobs;
pub mod lists;
pub mod machines;
pub mod outbox;
pub mod report;
pub mod retention;
pub mod tokens;
pub mod tree;

pub use context::Context;
