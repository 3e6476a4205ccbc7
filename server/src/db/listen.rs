//! Waking waiting claims when work appears. Submissions and requeues send a
//! Postgres `NOTIFY` on [`CHANNEL`] inside their transaction; one listener
//! per server (the `job-notifications` worker, `domain::jobs::queue`) turns it into
//! an in-process [`tokio::sync::Notify`] that every long-polling claim waits
//! on. Leases running out are announced by nobody, which is why waiting
//! claims also poll (see `Config::claim_poll`).

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// The Postgres notification channel.
pub const CHANNEL: &str = "patchperf_jobs";

/// Listens on [`CHANNEL`] and wakes `wake`'s waiters at each notification;
/// returns only when the connection fails.
pub async fn wake_on_notify(pool: &PgPool, wake: &tokio::sync::Notify) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    loop {
        listener.recv().await?;
        wake.notify_waiters();
    }
}
