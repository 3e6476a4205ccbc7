//! The patchperf server: the JSON API CI submits comparisons to, the runner
//! protocol lab machines take work through, and the HTML reports people
//! read. Everything lives in Postgres, so servers are stateless.
//!
//! Layers, each using only those below it: [`http`] (routes, pages, auth,
//! extractors) → [`domain`] (job lifecycle, queue, reports) → [`db`] (SQL).
//! [`app`] builds the whole HTTP application from an [`AppState`], so tests
//! drive it without a socket; [`MIGRATOR`] is the schema the application
//! expects. `main.rs` only parses the command line ([`cli`]) and runs it
//! ([`commands`]).

pub mod cli;
pub mod commands;
pub mod config;
pub mod db;
pub mod destination;
pub mod domain;
pub mod error;
pub mod git;
pub mod http;
pub mod postgres;
pub mod state;

pub use config::Config;
pub use error::Error;
pub use http::app;
pub use state::AppState;

/// The migrations in the workspace's `migrations/`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");
