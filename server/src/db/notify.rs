//! Waking waiting claims when work appears. Submissions and requeues send a
//! Postgres `NOTIFY` on [`CHANNEL`] inside their transaction; one listener
//! task per server turns it into an in-process [`tokio::sync::Notify`] that
//! every long-polling claim waits on. Leases running out are announced by
//! nobody, which is why waiting claims also poll (see `Config::claim_poll`).

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// The Postgres notification channel.
pub const CHANNEL: &str = "patchperf_jobs";

/// Spawns the listener task of this server; it runs until the runtime stops
/// and reconnects after errors.
pub fn spawn_listener(pool: PgPool, wake: Arc<tokio::sync::Notify>) {
    tokio::spawn(async move {
        loop {
            let result = listen(&pool, &wake).await;
            if pool.is_closed() {
                return;
            }
            if let Err(e) = result {
                tracing::warn!(error = %e, "job notification listener failed; retrying in 5 s");
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
}

async fn listen(pool: &PgPool, wake: &tokio::sync::Notify) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    loop {
        listener.recv().await?;
        wake.notify_waiters();
    }
}
