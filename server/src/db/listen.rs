//! Waking waiting claims when work appears. Submissions and requeues send a
//! Postgres `NOTIFY` on [`CHANNEL`] inside their transaction; one listener
//! per server (the `job-notifications` worker, `domain::jobs::queue`) turns it into
//! an in-process [`tokio::sync::Notify`] that every long-polling claim waits
//! on. Leases running out are announced by nobody, which is why waiting
//! claims also poll (see `Config::claim_poll`).

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// The Postgres notification channel.
pub const CHANNEL: &str = "patchperf_jobs";

/// A connection listening on [`CHANNEL`].
pub async fn listen(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Wakes `wake`'s waiters at each notification `listener` receives for
/// `span`; how many arrived. Fails when the connection does: a listener
/// that failed is not used again.
pub async fn wake_for(
    listener: &mut PgListener,
    wake: &tokio::sync::Notify,
    span: Duration,
) -> Result<usize, sqlx::Error> {
    let until = tokio::time::Instant::now() + span;
    let mut n = 0;
    loop {
        match tokio::time::timeout_at(until, listener.recv()).await {
            Ok(received) => {
                received?;
                n += 1;
                wake.notify_waiters();
            }
            Err(_) => return Ok(n),
        }
    }
}
