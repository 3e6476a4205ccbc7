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

/// Starts every background worker of the server (each has the one shape
/// of [`context::workers`] and shows in `/healthz`): what `serve` runs,
/// and what a test's server runs, so that they are the same list.
pub fn spawn_workers(ctx: &Context) -> Result<(), crate::Error> {
    outbox::deliver::spawn_sender(ctx)?;
    jobs::queue::spawn_listener(ctx);
    jobs::lifecycle::spawn_lease_sweeper(ctx);
    report::stored::spawn_keeper(ctx);
    bisection::spawn_driver(ctx);
    tree::spawn_watcher(ctx);
    lists::spawn_reader(ctx);
    retention::spawn_pruner(ctx);
    Ok(())
}
