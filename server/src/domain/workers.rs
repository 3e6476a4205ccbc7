//! Background workers, one shape for all: a named round of work run every
//! period, sooner when something wakes it, until the server shuts down.
//! Each round runs as its own task, so a round that fails or panics is
//! logged, counted and shown in `/healthz`, and the worker goes on with the
//! next round: one bad row or one unreachable remote never stops the work
//! for everyone else.
//!
//! To add a worker: write its round as `async fn(Context) -> Result<Done>`
//! and start it from `commands::serve` with [`Worker::spawn`].

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::Error;
use crate::domain::Context;

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// This many things were handled (0: nothing was due).
    Handled(usize),
    /// This many were handled and more are due: run again at once.
    More(usize),
}

/// A background worker: its name (as `/healthz` and the log show it), how
/// often it runs, and what may wake it sooner.
#[derive(Debug, Clone)]
pub struct Worker {
    /// Short and stable: `report-builder`, `tree-watcher`.
    pub name: &'static str,
    /// The longest wait between two rounds.
    pub period: Duration,
    /// Wakes it before its period is over.
    pub wake: Vec<Arc<Notify>>,
    /// How long to let changes settle after a wake-up before the round.
    pub settle: Duration,
}

impl Worker {
    /// A worker that runs every `period`.
    pub fn every(name: &'static str, period: Duration) -> Worker {
        Worker {
            name,
            period,
            wake: Vec::new(),
            settle: Duration::ZERO,
        }
    }

    /// Also woken by `notify`.
    #[must_use]
    pub fn woken_by(mut self, notify: &Arc<Notify>) -> Worker {
        self.wake.push(Arc::clone(notify));
        self
    }

    /// Waits `settle` after a wake-up before its round.
    #[must_use]
    pub fn settling(mut self, settle: Duration) -> Worker {
        self.settle = settle;
        self
    }

    /// Starts the worker on `ctx`: `round` runs now, then after each period
    /// or wake-up, until the server shuts down or its database closes.
    pub fn spawn<F, Fut>(self, ctx: &Context, round: F) -> JoinHandle<()>
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Done, Error>> + Send + 'static,
    {
        let ctx = ctx.clone();
        ctx.workers.register(self.name, self.period);
        tokio::spawn(async move { self.run(ctx, round).await })
    }

    async fn run<F, Fut>(self, ctx: Context, round: F)
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Done, Error>> + Send + 'static,
    {
        let mut shutting_down = ctx.shutting_down.subscribe();
        loop {
            if ctx.is_shutting_down() || ctx.db.is_closed() {
                return;
            }
            // Created before the round, so a wake-up during it is kept
            // (`notify_waiters` reaches every `Notified` already created).
            let mut woken: Vec<_> = self.wake.iter().map(|n| Box::pin(n.notified())).collect();
            ctx.workers.started(self.name);
            let outcome = tokio::spawn(round(ctx.clone())).await;
            let again = match outcome {
                Ok(Ok(done)) => {
                    ctx.workers.succeeded(self.name, done);
                    matches!(done, Done::More(_))
                }
                Ok(Err(e)) => {
                    tracing::warn!(worker = self.name, error = %e, "worker round failed");
                    ctx.workers.failed(self.name, &e.to_string(), false);
                    false
                }
                Err(e) if e.is_panic() => {
                    let why = panic_text(e.into_panic());
                    tracing::error!(worker = self.name, panic = %why, "worker round panicked; the worker goes on");
                    ctx.workers.failed(self.name, &why, true);
                    false
                }
                Err(e) => {
                    ctx.workers.failed(self.name, &e.to_string(), false);
                    false
                }
            };
            if again {
                tokio::task::yield_now().await;
                continue;
            }
            let any_wake = std::future::poll_fn(|cx| {
                if woken.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            });
            tokio::select! {
                () = any_wake => tokio::time::sleep(self.settle).await,
                () = tokio::time::sleep(self.period) => {}
                _ = shutting_down.changed() => {}
            }
        }
    }
}

/// A panic's message, as far as it is text.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
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

    fn register(&self, name: &'static str, period: Duration) {
        self.with(name, |h| h.period_seconds = period.as_secs_f64());
    }

    fn started(&self, name: &'static str) {
        self.with(name, |h| {
            h.running = true;
            h.last_run_at = Some(Utc::now());
        });
    }

    fn succeeded(&self, name: &'static str, done: Done) {
        self.with(name, |h| {
            h.running = false;
            h.rounds += 1;
            h.last_ok_at = Some(Utc::now());
            h.last_handled = match done {
                Done::Handled(n) | Done::More(n) => n,
            };
        });
    }

    fn failed(&self, name: &'static str, why: &str, panicked: bool) {
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
