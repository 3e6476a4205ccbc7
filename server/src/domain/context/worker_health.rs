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
    /// Whether the running round has run far longer than any round should
    /// ([`STUCK_AFTER`], and ten periods): what an admin alerts on.
    pub stuck: bool,
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

/// How long a round may run before `/healthz` calls its worker stuck
/// (and at least ten of its periods): the longest bounded work of a round
/// (an archive read, `list_read_timeout`, 5 minutes) with room to spare.
pub const STUCK_AFTER: Duration = Duration::from_secs(15 * 60);

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

    /// A round the shutdown cut short: it ran, and neither did its work
    /// nor failed at it.
    pub(crate) fn stopped(&self, name: &'static str) {
        self.with(name, |h| {
            h.running = false;
            h.rounds += 1;
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
        let mut all = self
            .health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let now = Utc::now();
        for h in all.values_mut() {
            let periods = Duration::try_from_secs_f64(h.period_seconds * 10.0).unwrap_or_default();
            let bound = STUCK_AFTER.max(periods);
            let running_for = h
                .last_run_at
                .and_then(|at| (now - at).to_std().ok())
                .unwrap_or_default();
            h.stuck = h.running && running_for > bound;
        }
        all
    }

    /// Panics over all workers since the server started.
    pub fn panics(&self) -> u64 {
        self.snapshot().values().map(|h| h.panics).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_running_far_too_long_is_stuck() {
        let w = Workers::default();
        w.register("list-reader", Duration::from_secs(30));
        w.started("list-reader");
        assert!(!w.snapshot()["list-reader"].stuck);
        w.with("list-reader", |h| {
            h.last_run_at = Some(Utc::now() - chrono::Duration::minutes(16));
        });
        assert!(w.snapshot()["list-reader"].stuck);
        w.succeeded("list-reader", Done::Handled(0));
        assert!(!w.snapshot()["list-reader"].stuck);
        // A slow worker's bound is ten of its periods.
        w.register("slow", Duration::from_secs(3600));
        w.started("slow");
        w.with("slow", |h| {
            h.last_run_at = Some(Utc::now() - chrono::Duration::minutes(16));
        });
        assert!(!w.snapshot()["slow"].stuck);
    }
}
