//! Numbers no counter or rate can reach, and seconds no int column holds,
//! are refused at upload; and rows that got into the database before that
//! (inserted here with SQL, past the upload's checks) neither hang a report
//! nor break the listings, while the server keeps answering.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use patchperf_common::protocol::RunUpload;
use patchperf_common::run::Side;
use patchperf_server::{AppState, Config};
use patchperf_testkit::TestServer;
use serde_json::json;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{TestApp, run_result};

/// Ordinary dup1 speeds: base 100000 ops a task and second, patched 5% more.
fn ops(side: Side, seq: u32, _nr_task: u32) -> f64 {
    let noise = f64::from(seq % 3) * 40.0;
    match side {
        Side::Base => 100_000.0 + noise,
        Side::Patched => 105_000.0 + noise,
    }
}

/// A finished comparison of dup1 with 1 and 2 tasks, 3 runs a side.
async fn finished(app: &TestApp) -> i64 {
    let machine = app.register("lab1").await;
    let id = app
        .submit("[PATCH] fs: dup faster", "lab1", &[1, 2], 3)
        .await;
    while let Some(spec) = app.claim(machine).await {
        app.run_job(machine, &spec, &[1, 2], ops, true).await;
    }
    id
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn values_no_counter_can_reach_are_refused_at_upload(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("lab1").await;
    app.submit("[PATCH] fs: dup faster", "lab1", &[1], 3).await;
    let job = app.claim(machine).await.unwrap();
    let boot = job.boots[0];

    let upload = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut r = serde_json::to_value(run_result(1, 100_000.0)).unwrap();
        edit(&mut r);
        json!({ "boot": boot, "result": r })
    };
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            upload(&|r| r["metrics"][0]["value"] = json!(1.7e308)),
            "will-it-scale.per_process_ops",
        ),
        (
            upload(&|r| r["metrics"][0]["value"] = json!(-1e308)),
            "will-it-scale.per_process_ops",
        ),
        (
            upload(&|r| r["series"][0]["points"][2] = json!(1e300)),
            "will-it-scale.1.processes",
        ),
        (
            upload(&|r| r["seconds"] = json!(2_147_483_648u64)),
            "seconds",
        ),
        (
            upload(&|r| r["warmup_seconds"] = json!(4_000_000_000u64)),
            "warmup_seconds",
        ),
    ];
    for (body, named) in cases {
        let a = app.job_call(machine, &job, "runs", body).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
        assert!(a.error().contains(named), "{named}: {}", a.error());
    }
    assert_eq!(app.count("runs").await, 0);

    // The same run with ordinary numbers is stored.
    let ok = serde_json::to_value(RunUpload {
        boot,
        result: run_result(1, 100_000.0),
    })
    .unwrap();
    let a = app.job_call(machine, &job, "runs", ok).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
}

/// `GET path` over a fresh connection; the status, or `None` when no
/// answer came within `limit`.
async fn get_within(addr: SocketAddr, path: &str, limit: Duration) -> Option<u16> {
    let ask = async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await.unwrap();
        let head = String::from_utf8_lossy(&answer);
        head.split_whitespace().nth(1).and_then(|c| c.parse().ok())
    };
    tokio::time::timeout(limit, ask).await.ok().flatten()
}

/// Serves the app over the test database on a runtime of its own with two
/// workers, as the server runs on a two-core machine, so a handler that
/// never returns holds a worker of that runtime and not the test's.
fn serve_on_two_workers(pool: &PgPool, config: Config) -> (SocketAddr, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = pool.connect_options().as_ref().clone();
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_with(options)
            .await
            .unwrap();
        let server =
            TestServer::serve(AppState::new(pool, config), "127.0.0.1:0".parse().unwrap()).await;
        tx.send(server.addr()).unwrap();
        // Serve until the runtime is shut down.
        std::future::pending::<()>().await;
        drop(server);
    });
    let addr = rx.recv().unwrap();
    (addr, rt)
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn extreme_values_already_stored_neither_hang_a_report_nor_starve_the_server(pool: PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let id = finished(&app).await;
    // Past the upload's checks: 1.7e308 against 0 with one task, ±1e308
    // with two, and a per-second series spanning ±1e308.
    for (nr_task, base, patched) in [(1, 0.0, 1.7e308), (2, -1e308, 1e308)] {
        sqlx::query(
            "UPDATE metric_values SET value = CASE side WHEN 'base' THEN $1 ELSE $2 END
             WHERE comparison_id = $3 AND nr_task = $4",
        )
        .bind(base)
        .bind(patched)
        .bind(id)
        .bind(nr_task)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query("UPDATE run_series SET points = ARRAY[1e308, -1e308, 0, 1.7e308]::float8[]")
        .execute(&pool)
        .await
        .unwrap();

    let (addr, rt) = serve_on_two_workers(&pool, Config::default());
    let paths = [
        format!("/comparisons/{id}"),
        format!(
            "/comparisons/{id}/plots/runs.svg?workload=dup1&mode=process&nr_task=1&metric=will-it-scale.per_process_ops"
        ),
        format!(
            "/comparisons/{id}/plots/runs.svg?workload=dup1&mode=process&nr_task=2&metric=will-it-scale.per_process_ops"
        ),
        format!("/comparisons/{id}/plots/series.svg?workload=dup1&mode=process&nr_task=2"),
        format!("/api/v1/comparisons/{id}"),
        format!("/api/v1/comparisons/{id}/report.txt"),
    ];
    let reports: Vec<_> = paths
        .iter()
        .map(|p| {
            let p = p.clone();
            tokio::spawn(async move {
                let status = get_within(addr, &p, Duration::from_secs(20)).await;
                (p, status)
            })
        })
        .collect();
    // While those are being answered, the server still answers.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let health = get_within(addr, "/healthz", Duration::from_secs(5)).await;
    let mut answers = Vec::new();
    for r in reports {
        answers.push(r.await.unwrap());
    }
    rt.shutdown_background();
    assert_eq!(health, Some(200), "/healthz while reports are built");
    for (path, status) in answers {
        // A report or plot, or a clear 503 that it took too long; never
        // no answer at all.
        assert!(
            matches!(status, Some(200 | 503)),
            "{path} answered {status:?}"
        );
    }
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn seconds_beyond_an_int_stored_before_break_neither_listing_nor_dashboard(pool: PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let id = finished(&app).await;
    // As uploads were accepted before seconds had a bound.
    sqlx::query(
        "UPDATE runs SET result = jsonb_set(jsonb_set(result, '{seconds}', '2147483648'),
                                           '{warmup_seconds}', '99999999999')
         WHERE id = (SELECT min(id) FROM runs WHERE comparison_id = $1)",
    )
    .bind(id)
    .execute(&pool)
    .await
    .unwrap();

    listing_dashboard_and_report_answer(&app, id).await;
}

/// The dashboard, the listing (with comparison `id` in it) and every form
/// of `id`'s report answer 200.
async fn listing_dashboard_and_report_answer(app: &TestApp, id: i64) {
    for path in [
        "/".to_string(),
        "/api/v1/comparisons".to_string(),
        format!("/comparisons/{id}"),
        format!("/api/v1/comparisons/{id}"),
        format!("/api/v1/comparisons/{id}/report.txt"),
    ] {
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
    let listed = app.get_json("/api/v1/comparisons").await;
    assert!(
        listed.to_string().contains(&format!("\"id\":{id}")),
        "{listed}"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_migration_to_typed_seconds_survives_runs_stored_before_with_any_seconds(pool: PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let id = finished(&app).await;
    // The database as it was before the migration, with runs whose JSON
    // seconds no `integer` holds, or that are not numbers at all.
    sqlx::raw_sql(
        "ALTER TABLE runs DROP COLUMN seconds, DROP COLUMN warmup_seconds;
         DELETE FROM _sqlx_migrations WHERE version = 20261201021500;",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::raw_sql(
        "UPDATE runs SET result = jsonb_set(result, '{seconds}', '2147483648')
         WHERE id = (SELECT min(id) FROM runs);
         UPDATE runs SET result = jsonb_set(result, '{warmup_seconds}', '\"one\"')
         WHERE id = (SELECT max(id) FROM runs);",
    )
    .execute(&pool)
    .await
    .unwrap();

    patchperf_server::MIGRATOR.run(&pool).await.unwrap();

    let seconds: Vec<(Option<i32>, Option<i32>)> =
        sqlx::query_as("SELECT seconds, warmup_seconds FROM runs ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(seconds.first(), Some(&(None, Some(1))));
    assert_eq!(seconds.last(), Some(&(Some(5), None)));
    assert!(
        seconds[1..seconds.len() - 1]
            .iter()
            .all(|s| *s == (Some(5), Some(1)))
    );
    listing_dashboard_and_report_answer(&app, id).await;
}
