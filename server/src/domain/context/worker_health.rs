//! How each background worker of this server is doing: its rounds, its
//! last good one and its last failure, panics included. The workers
//! (`domain::context::workers`) write it; `/healthz` reads it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// This many things were handled (0: nothing was due).
    Handled(usize),
    /// This many were handled and more are due: run again at once.
    More(usize),
}

/// How one worker is doing, as `/healthz` shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkerHealth {
    /// Its period in seconds.
    pub period_seconds: f64,
    /// Rounds finished (well or not).
    pub rounds: u64,
    /// Whether a round is running now.
    pub running: bool,
    /// When the last round started.
    pub last_run_at: Option<DateTime<Utc>>,
    /// When the last round that went well ended.
    pub last_ok_at: Option<DateTime<Utc>>,
    /// How many things the last good round handled.
    pub last_handled: usize,
    /// Rounds that failed, panics included.
    pub errors: u64,
    /// Rounds that panicked.
    pub panics: u64,
    /// The last failure and when.
    pub last_error: Option<String>,
    /// When the last failure was.
    pub last_error_at: Option<DateTime<Utc>>,
}

/// Every worker of this server and how it is doing.
#[derive(Debug, Default)]
pub struct Workers {
    health: Mutex<BTreeMap<&'static str, WorkerHealth>>,
}

/// Longest failure text kept per worker.
const MAX_ERROR_CHARS: usize = 500;

impl Workers {
    fn with(&self, name: &'static str, f: impl FnOnce(&mut WorkerHealth)) {
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        f(health.entry(name).or_default());
    }

    pub(crate) fn register(&self, name: &'static str, period: Duration) {
        self.with(name, |h| h.period_seconds = period.as_secs_f64());
    }

    pub(crate) fn started(&self, name: &'static str) {
        self.with(name, |h| {
            h.running = true;
            h.last_run_at = Some(Utc::now());
        });
    }

    pub(crate) fn succeeded(&self, name: &'static str, done: Done) {
        self.with(name, |h| {
            h.running = false;
            h.rounds += 1;
            h.last_ok_at = Some(Utc::now());
            h.last_handled = match done {
                Done::Handled(n) | Done::More(n) => n,
            };
        });
    }

    pub(crate) fn failed(&self, name: &'static str, why: &str, panicked: bool) {
        self.with(name, |h| {
            h.running = false;
            h.rounds += 1;
            h.errors += 1;
            if panicked {
                h.panics += 1;
            }
            h.last_error = Some(why.chars().take(MAX_ERROR_CHARS).collect());
            h.last_error_at = Some(Utc::now());
        });
    }

    /// Each worker's health, by name.
    pub fn snapshot(&self) -> BTreeMap<&'static str, WorkerHealth> {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Panics over all workers since the server started.
    pub fn panics(&self) -> u64 {
        self.snapshot().values().map(|h| h.panics).sum()
    }
}
