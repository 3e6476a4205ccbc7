//! Background workers, one shape for all: a named round of work run every
//! period, sooner when something wakes it, until the server shuts down.
//! Each round runs as its own task, so a round that fails or panics is
//! logged, counted and shown in `/healthz`, and the worker goes on with the
//! next round: one bad row or one unreachable remote never stops the work
//! for everyone else. A round the shutdown cuts short (its pool closed
//! under it) is no failure: logged as such, not counted.
//!
//! To add a worker: write its round as `async fn(Context) -> Result<Done>`
//! and start it with [`Worker::spawn`] from `domain::spawn_workers`, the
//! one list that `serve` and a test's server both start.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::Error;
use crate::domain::Context;
pub use crate::domain::context::worker_health::Done;

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
                // `serve` closes the pool once the listener stopped, under
                // a round still running: the shutdown ended it, nothing
                // failed.
                Ok(Err(e)) if ctx.is_shutting_down() => {
                    tracing::info!(worker = self.name, error = %e, "worker round cut short by the shutdown");
                    ctx.workers.stopped(self.name);
                    false
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
