//! All SQL of the server, one module per table (or per tight group of
//! tables), each a handful of small functions. Routes call these; nothing
//! here knows about HTTP.
//!
//! Functions that write take a `&mut PgConnection` so the caller decides the
//! transaction; read-only functions take whatever executor is at hand.

pub mod bisections;
pub mod boots;
pub mod changes;
pub mod comparisons;
pub mod events;
pub mod history;
pub mod jobs;
pub mod list_messages;
pub mod list_series;
pub mod listen;
pub mod lists;
pub mod machines;
pub mod outbox;
pub mod patches;
pub mod progress;
pub mod reports;
pub mod retention;
pub mod run_lengths;
pub mod runs;
pub mod setup;
pub mod tokens;
pub mod trees;
pub mod verdicts;

/// Notifies every server's claim waiters (see [`crate::db::listen`]) when the
/// surrounding transaction commits.
pub async fn notify_jobs_changed(conn: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query!("SELECT pg_notify($1, '')", crate::db::listen::CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}
