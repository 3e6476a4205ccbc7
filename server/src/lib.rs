//! The patchperf server: the JSON API CI submits comparisons to, the runner
//! protocol lab machines take work through, and (later) the HTML reports.
//! Everything lives in Postgres, so servers are stateless.
//!
//! [`app`] builds the whole HTTP application from an [`AppState`], so tests
//! drive it without a socket; [`MIGRATOR`] is the schema the application
//! expects. `main.rs` only parses the command line ([`cli`]) and runs it
//! ([`commands`]).

pub mod auth;
pub mod cli;
pub mod commands;
pub mod config;
pub mod db;
pub mod error;
pub mod extract;
pub mod interleave;
pub mod lifecycle;
pub mod more_runs;
pub mod notify;
pub mod postgres;
pub mod queue;
pub mod report;
pub mod routes;
pub mod state;
pub mod waiting;

pub use config::Config;
pub use error::Error;
pub use routes::app;
pub use state::AppState;

/// The migrations in the workspace's `migrations/`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");
