//! The one shape of every background worker: a round that fails or panics
//! is counted and shown in `/healthz`, and the worker goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use patchperf_server::domain::context::workers::{Done, Worker};
use sqlx::PgPool;

use crate::helpers::TestApp;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_worker_that_panics_is_counted_in_healthz_and_runs_again(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let rounds = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&rounds);
    let task = Worker::every("flaky", Duration::from_millis(20)).spawn(&app.state, move |_| {
        let round = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            match round {
                0 => panic!("a row that cannot be composed"),
                1 => Err(patchperf_server::Error::Internal(
                    "the relay went away".into(),
                )),
                _ => Ok(Done::Handled(round)),
            }
        }
    });
    let mut health = serde_json::Value::Null;
    for _ in 0..500 {
        health = app.get("/healthz").await.json;
        if health["workers"]["flaky"]["last_ok_at"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let flaky = &health["workers"]["flaky"];
    assert_eq!(flaky["panics"], 1, "{health}");
    assert_eq!(flaky["errors"], 2, "a panic is an error too: {health}");
    assert_eq!(
        flaky["last_error"], "internal error: the relay went away",
        "{health}"
    );
    assert!(flaky["rounds"].as_u64().unwrap() >= 3, "{health}");
    assert_eq!(health["worker_panics"], 1, "{health}");
    assert_eq!(health["status"], "ok", "{health}");

    // Shutting down stops it after its round.
    app.state.begin_shutdown();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the worker stops at shutdown")
        .unwrap();
}

/// The job whose finish leaves its comparison final wakes the workers
/// waiting on finished comparisons (a list's replies, a tree's history,
/// the bisection driver), so they act at once instead of at their next
/// poll; the finishes before it wake none of them.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_finish_that_ends_a_comparison_wakes_the_workers_waiting_on_it(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, serde_json::json!({})).await;
    let mut woken = Vec::new();
    while let Some(job) = app.claim(machine).await {
        app.upload_all(machine, &job).await;
        // Created before the finish, so it catches a wake-up during it.
        let settled = app.state.comparison_settled.notified();
        app.finish_done(machine, &job).await;
        let fired = tokio::time::timeout(Duration::from_millis(100), settled).await;
        woken.push(fired.is_ok());
    }
    assert_eq!(woken, [false, false, true]);
    let view = app.get(&format!("/api/v1/comparisons/{id}")).await.json;
    assert_eq!(view["status"], "done", "{view:#}");
}

/// The `job-notifications` listener's rounds end (`wake_for` listens for a
/// span, then says how many notifications came), so `/healthz` can show
/// it alive; a notification inside the span wakes the waiting claims.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_listening_round_ends_counting_the_notifications(pool: PgPool) {
    use patchperf_server::db::listen;
    let wake = Arc::new(tokio::sync::Notify::new());
    let mut listener = listen::listen(&pool).await.unwrap();
    let woken = Arc::clone(&wake);
    let waiter = tokio::spawn(async move { woken.notified().await });
    tokio::task::yield_now().await;
    sqlx::query(&format!("NOTIFY {}", listen::CHANNEL))
        .execute(&pool)
        .await
        .unwrap();
    let n = listen::wake_for(&mut listener, &wake, Duration::from_millis(500))
        .await
        .unwrap();
    assert_eq!(n, 1);
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiting claim was woken")
        .unwrap();
    // A quiet span ends too, with nothing counted.
    let n = listen::wake_for(&mut listener, &wake, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(n, 0);
}

/// What a test's subscriber logged, shared with its writer.
#[derive(Clone, Default)]
struct Logged(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `serve` closes the pool once its listener stopped; a round still
/// running then fails on the closed pool. That is the shutdown, not a
/// failure: it is not counted and not logged as a warning.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_round_cut_short_by_the_shutdown_is_no_failure(pool: PgPool) {
    let logged = Logged::default();
    let writer = logged.clone();
    // The test's runtime is one thread: the worker's tasks log here too.
    let _log = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let app = TestApp::new(pool).await;
    let started = Arc::new(tokio::sync::Notify::new());
    let running = Arc::clone(&started);
    let task = Worker::every("closing", Duration::from_secs(3600)).spawn(&app.state, move |ctx| {
        let running = Arc::clone(&running);
        async move {
            running.notify_one();
            let mut stopping = ctx.shutting_down.subscribe();
            let _ = stopping.wait_for(|s| *s).await;
            while !ctx.db.is_closed() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sqlx::query("SELECT 1").execute(&ctx.db).await?;
            Ok(Done::Handled(1))
        }
    });
    started.notified().await;
    app.state.begin_shutdown();
    app.state.db.close().await;
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the worker stops at shutdown")
        .unwrap();
    let health = &app.state.workers.snapshot()["closing"];
    assert_eq!(health.errors, 0, "{health:?}");
    let log = String::from_utf8(logged.0.lock().unwrap().clone()).unwrap();
    assert!(!log.contains("WARN"), "{log}");
    assert!(
        log.contains("worker round cut short by the shutdown"),
        "{log}"
    );
}
