//! Report work that is all CPU (statistics, plots) runs on tokio's blocking
//! threads, not on the async workers that answer every request, and within
//! a time limit: however a comparison's numbers make that work slow, the
//! other requests (`/healthz`, heartbeats, uploads) are still answered, and
//! the reader of that comparison gets a 503 saying so instead of no answer.

use std::time::Duration;

use crate::Error;

/// Runs `work` on a blocking thread; its result, or
/// [`Error::Unavailable`] when it has not finished within `limit` (the
/// thread is left to finish on its own: a blocking thread cannot be
/// stopped), or [`Error::Internal`] when it panicked. `what` names the work
/// in the message, `the report of comparison 7`.
pub async fn off_workers<T, F>(limit: Duration, what: &str, work: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::time::timeout(limit, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) => Err(Error::Internal(format!("{what}: {e}"))),
        Err(_) => Err(Error::unavailable(format!(
            "{what} took longer than {:.1} s to compute and was given up; \
             the server goes on answering other requests",
            limit.as_secs_f64()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_past_its_limit_is_a_503_and_the_runtime_goes_on() {
        let slow = off_workers(
            Duration::from_millis(50),
            "the report of comparison 7",
            || {
                std::thread::sleep(Duration::from_secs(2));
            },
        )
        .await;
        let e = slow.unwrap_err();
        assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("the report of comparison 7 took longer than 0.1 s"),
            "{e}"
        );
        let quick = off_workers(Duration::from_secs(5), "sum", || 1 + 1).await;
        assert_eq!(quick.unwrap(), 2);
    }
}
