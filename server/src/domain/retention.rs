//! The retention policy for bulky data: a comparison finished more than a
//! given age ago keeps its stored report (every table, verdict and
//! statistic its pages, JSON and `report.txt` show), its overall verdict
//! and its history points, and loses what only the per-second plots and
//! raw data read: its runs' per-second series, their perf-profile values
//! (kept inside the stored report) and per-second samples. Its stored
//! report is then final: it is never built again from what is left
//! (`stored::read` takes it as it is).
//!
//! [`prune`] does one pass; `patchperf-server prune` calls it, and with
//! `serve --prune-after` the `pruner` worker ([`spawn_pruner`]) calls
//! it every few hours.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{Acquire, PgConnection, PgPool};

use crate::db::retention::{self, Removed};
use crate::domain::Context;
use crate::domain::context::workers::{Done, Worker};
use crate::{Error, db};

/// How many comparisons one query picks; each is pruned in a transaction
/// of its own, so a pass never holds long locks.
const BATCH: i64 = 100;

/// What a pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Comparisons pruned.
    pub comparisons: u64,
    /// What was removed of them.
    pub removed: Removed,
}

/// What [`prune`] would remove now, removing nothing: the same pass inside
/// one transaction (each comparison's own transaction a savepoint in it),
/// rolled back.
pub async fn prune_dry_run(db: &PgPool, older_than: Duration) -> Result<Pruned, Error> {
    let cutoff = cutoff(older_than)?;
    let mut tx = db.begin().await?;
    let done = pass(&mut tx, cutoff).await?;
    tx.rollback().await?;
    Ok(done)
}

/// Prunes every comparison that finished more than `older_than` ago and
/// has a current stored report (see [`retention::prunable`]).
pub async fn prune(db: &PgPool, older_than: Duration) -> Result<Pruned, Error> {
    let cutoff = cutoff(older_than)?;
    let mut conn = db.acquire().await?;
    pass(&mut conn, cutoff).await
}

/// One pass over what may be pruned, each comparison in a transaction of
/// its own begun on `conn` (on a plain connection a transaction, inside
/// one a savepoint).
async fn pass(conn: &mut PgConnection, cutoff: DateTime<Utc>) -> Result<Pruned, Error> {
    let mut done = Pruned::default();
    loop {
        let ids = retention::prunable(&mut *conn, cutoff, BATCH).await?;
        let mut marked = false;
        for &id in &ids {
            let mut tx = conn.begin().await?;
            // Checked again under the update: a change may have come since.
            if !retention::mark_pruned(&mut tx, id, cutoff).await? {
                continue;
            }
            marked = true;
            let removed = retention::remove_bulk(&mut tx, id).await?;
            tx.commit().await?;
            done.add(removed);
        }
        if !marked {
            return Ok(done);
        }
    }
}

fn cutoff(older_than: Duration) -> Result<DateTime<Utc>, Error> {
    let age = chrono::Duration::from_std(older_than)
        .map_err(|_| Error::Setup(format!("an age of {older_than:?} is too long")))?;
    Ok(Utc::now() - age)
}

impl Pruned {
    fn add(&mut self, removed: Removed) {
        self.comparisons += 1;
        self.removed.series += removed.series;
        self.removed.profile_values += removed.profile_values;
        self.removed.runs_sampled += removed.runs_sampled;
    }
}

/// How often the pruner runs: a day's finished comparisons are a few
/// hundred, a pass over them takes seconds.
const PRUNE_EVERY: Duration = Duration::from_secs(6 * 3600);

/// Starts the `pruner` worker when the configuration asks for a retention
/// (`prune_after`): one [`prune`] pass now and every [`PRUNE_EVERY`].
pub fn spawn_pruner(ctx: &Context) -> Option<tokio::task::JoinHandle<()>> {
    let older_than = ctx.config.prune_after?;
    Some(
        Worker::every("pruner", PRUNE_EVERY).spawn(ctx, move |ctx| async move {
            let pruned = prune(&ctx.db, older_than).await?;
            if pruned.comparisons > 0 {
                tracing::info!(comparisons = pruned.comparisons, "pruned bulky data");
            }
            Ok(Done::Handled(
                usize::try_from(pruned.comparisons).unwrap_or(usize::MAX),
            ))
        }),
    )
}

/// Whether comparison `id`'s stored report stands for data pruned since.
pub async fn pruned(db: &PgPool, id: i64) -> Result<bool, Error> {
    Ok(db::retention::pruned_at(db, id).await?.is_some())
}
