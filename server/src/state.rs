//! The state every handler receives: the database pool, the configuration
//! and the in-process wake-up for waiting claims.

use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::{Notify, watch};

use crate::Config;
use crate::domain::report::cache::ReportCache;
use crate::git::Mirrors;

/// Cloned into every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The Postgres pool.
    pub db: PgPool,
    /// Tunables.
    pub config: Arc<Config>,
    /// Woken when jobs may have become claimable (see [`crate::db::notify`]).
    pub jobs_changed: Arc<Notify>,
    /// Becomes true when the server starts shutting down, so long-polling
    /// claims answer at once instead of holding the shutdown up.
    pub shutting_down: Arc<watch::Sender<bool>>,
    /// The reports this server built, kept until their inputs change.
    pub reports: Arc<ReportCache>,
    /// Woken when this server stored a run, so the report builder (see
    /// `domain::report::stored`) rebuilds that comparison's report soon;
    /// changes made through other servers reach it by its poll.
    pub reports_stale: Arc<Notify>,
    /// The mirrors of the repositories ranges are read from.
    pub git: Arc<Mirrors>,
}

impl AppState {
    /// State over an already migrated pool.
    pub fn new(db: PgPool, config: Config) -> Self {
        let git = Mirrors::new(config.git_dir.clone(), config.local_git, config.git_timeout);
        AppState {
            git: Arc::new(git),
            db,
            config: Arc::new(config),
            jobs_changed: Arc::new(Notify::new()),
            shutting_down: Arc::new(watch::Sender::new(false)),
            reports: Arc::new(ReportCache::default()),
            reports_stale: Arc::new(Notify::new()),
        }
    }

    /// Tells waiting claims to answer now: the server is stopping.
    pub fn begin_shutdown(&self) {
        self.shutting_down.send_replace(true);
    }
}
