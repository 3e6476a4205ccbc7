//! What the domain works with, apart from how it is asked: the database,
//! the configuration, the git mirrors, the reports this server keeps, what
//! it counts for `/metrics`, and the in-process wake-ups between them. The
//! HTTP layer's state holds one and hands it down; commands and background
//! workers build theirs the same way. Here too: what the server counts
//! ([`telemetry`]) and the background workers' one shape ([`workers`]) with
//! how each is doing ([`worker_health`]).

pub mod admission;
pub mod telemetry;
pub mod worker_health;
pub mod workers;

use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::{Notify, Semaphore, watch};

use crate::Config;
use crate::domain::context::telemetry::Telemetry;
use crate::domain::context::worker_health::Workers;
use crate::domain::report::cache::ReportCache;
use crate::git::Mirrors;

/// Cheap to clone: every part is shared.
#[derive(Debug, Clone)]
pub struct Context {
    /// The Postgres pool.
    pub db: PgPool,
    /// Tunables.
    pub config: Arc<Config>,
    /// Woken when jobs may have become claimable (see [`crate::db::listen`]).
    pub jobs_changed: Arc<Notify>,
    /// The reports this server built, kept until their inputs change.
    pub reports: Arc<ReportCache>,
    /// Woken when this server stored a run, so the report builder (see
    /// `domain::report::stored`) rebuilds that comparison's report soon;
    /// changes made through other servers reach it by its poll.
    pub reports_stale: Arc<Notify>,
    /// Woken when list mail was handed in or a list's archive pushed, so
    /// the `list-reader` worker (`domain::lists`) runs its round now.
    pub mail_arrived: Arc<Notify>,
    /// Woken when a job this server finished left its comparison final,
    /// so the workers that act on finished comparisons (a list's replies,
    /// a tree's history, a bisection's next probe) act now instead of at
    /// their next poll (finishes through other servers reach them there).
    pub comparison_settled: Arc<Notify>,
    /// The mirrors of the repositories ranges are read from.
    pub git: Arc<Mirrors>,
    /// The background workers and how each is doing.
    pub workers: Arc<Workers>,
    /// What `/metrics` counts (requests, report builds).
    pub telemetry: Arc<Telemetry>,
    /// Mail handed in at once: in all, and per token.
    pub intake: Arc<admission::Admission>,
    /// Job finishes at once. A finish holds its transaction (the job and
    /// its comparison locked) while `jobs::more_runs` reads the report
    /// through the pool; were every connection held so, none would be left
    /// for those reads and every finish would wait out the pool's timeout
    /// (`bench/load.sh`, 2026-12-06: 138 requests failed so). A quarter of
    /// the pool at most holds one.
    pub finishes: Arc<Semaphore>,
    /// Becomes true when the server starts shutting down: long-polling
    /// claims answer at once and workers stop after their current round.
    pub shutting_down: Arc<watch::Sender<bool>>,
}

impl Context {
    /// A context over an already migrated pool.
    pub fn new(db: PgPool, config: Config) -> Self {
        let git = Mirrors::new(&config);
        // A quarter of the pool at most (mail handed in, one a token; job
        // finishes): claims and pages keep the rest.
        let quarter = usize::try_from(db.options().get_max_connections() / 4).unwrap_or(1);
        Context {
            git: Arc::new(git),
            db,
            config: Arc::new(config),
            jobs_changed: Arc::new(Notify::new()),
            reports: Arc::new(ReportCache::default()),
            reports_stale: Arc::new(Notify::new()),
            mail_arrived: Arc::new(Notify::new()),
            comparison_settled: Arc::new(Notify::new()),
            workers: Arc::new(Workers::default()),
            telemetry: Arc::new(Telemetry::default()),
            intake: admission::Admission::new("mail handed in", quarter, 1),
            finishes: Arc::new(Semaphore::new(quarter.max(1))),
            shutting_down: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Tells waiting claims to answer now and workers to stop: the server
    /// is stopping.
    pub fn begin_shutdown(&self) {
        self.shutting_down.send_replace(true);
    }

    /// Whether the server is stopping.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutting_down.borrow()
    }

    /// What the background workers have still to do, as `/healthz` shows
    /// it; an error when the database does not answer.
    pub async fn backlog(&self) -> Result<Backlog, crate::Error> {
        Ok(Backlog {
            reports_to_build: crate::db::reports::stale_count(&self.db).await?,
            mail_queued: crate::db::outbox::queued_mail(&self.db).await?,
        })
    }
}

/// What the background workers have still to do.
#[derive(Debug, Clone, Copy)]
pub struct Backlog {
    /// Comparisons whose stored report is out of date.
    pub reports_to_build: i64,
    /// Mail waiting in the outbox.
    pub mail_queued: i64,
}
