//! `/metrics` as Prometheus reads it: only an admin on the main address,
//! in a format Prometheus' own parser takes, and telling a job's way from
//! queued through claimed and building to done, with the requests that
//! moved it counted by route. The address of `--metrics-listen` and the
//! JSON log with request ids are checked on the binary in
//! `private_postgres.rs`.

use axum::http::{Method, StatusCode};
use patchperf_testkit::openmetrics::{self, Sample};
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::TestApp;

async fn scrape(app: &TestApp) -> Vec<Sample> {
    let a = app
        .send(Method::GET, "/metrics", Some(&app.admin), &[], None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    openmetrics::parse(&a.body)
}

fn jobs(samples: &[Sample], state: &str) -> f64 {
    openmetrics::value(samples, "patchperf_jobs", &[("state", state)])
        .unwrap_or_else(|| panic!("no patchperf_jobs{{state={state}}}"))
}

#[sqlx::test(migrations = "../migrations")]
async fn only_a_metrics_or_admin_token_reads_the_metrics_on_the_main_address(pool: PgPool) {
    let scraper =
        patchperf_testkit::token(&pool, patchperf_server::domain::tokens::TokenKind::Metrics).await;
    let app = TestApp::new(pool).await;
    assert_eq!(app.get("/metrics").await.status, StatusCode::UNAUTHORIZED);
    for token in [&app.ci, &app.runner] {
        let a = app
            .send(Method::GET, "/metrics", Some(token), &[], None)
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
    }
    for token in [&app.admin, &scraper] {
        let a = app
            .send(Method::GET, "/metrics", Some(token), &[], None)
            .await;
        assert_eq!(a.status, StatusCode::OK);
        assert!(a.body.ends_with("# EOF\n"), "{}", a.body);
    }
    // The scrape token reads the metrics and does nothing else.
    let submit = app
        .post("/api/v1/comparisons", &scraper, json!({"runs": 3}))
        .await;
    assert_eq!(submit.status, StatusCode::FORBIDDEN, "{submit:?}");
    let claim = app
        .post(
            "/api/v1/jobs/claim",
            &scraper,
            json!({"machine_id": 1, "wait_seconds": 0}),
        )
        .await;
    assert_eq!(claim.status, StatusCode::FORBIDDEN, "{claim:?}");
    let tokens = app
        .send(Method::GET, "/api/v1/tokens", Some(&scraper), &[], None)
        .await;
    assert_eq!(tokens.status, StatusCode::FORBIDDEN, "{tokens:?}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_scrape_follows_a_job_from_queued_to_done(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({ "machine": "m1" })).await;

    let queued = scrape(&app).await;
    assert_eq!(jobs(&queued, "queued"), 3.0);
    assert_eq!(jobs(&queued, "claimed"), 0.0);
    assert_eq!(
        openmetrics::value(&queued, "patchperf_jobs_queued", &[("machine", "m1")]),
        Some(3.0)
    );
    assert_eq!(
        openmetrics::value(&queued, "patchperf_comparisons", &[("status", "queued")]),
        Some(1.0)
    );
    assert_eq!(
        openmetrics::value(&queued, "patchperf_machine_job", &[("machine", "m1")]),
        Some(0.0)
    );
    let state = |samples: &[Sample], state: &str| {
        openmetrics::value(
            samples,
            "patchperf_machine_state",
            &[("machine", "m1"), ("state", state)],
        )
    };
    assert_eq!(state(&queued, "active"), Some(1.0));
    assert_eq!(state(&queued, "draining"), Some(0.0));

    let job = app.claim(machine).await.unwrap();
    let claimed = scrape(&app).await;
    assert_eq!(jobs(&claimed, "queued"), 2.0);
    assert_eq!(jobs(&claimed, "claimed"), 1.0);
    assert_eq!(
        openmetrics::value(&claimed, "patchperf_machine_job", &[("machine", "m1")]),
        Some(job.job_id as f64)
    );
    assert_eq!(
        openmetrics::value(&claimed, "patchperf_comparisons", &[("status", "running")]),
        Some(1.0)
    );
    let seen = openmetrics::value(
        &claimed,
        "patchperf_machine_last_seen_timestamp_seconds",
        &[("machine", "m1")],
    )
    .expect("the machine's last heartbeat");
    let now = chrono::Utc::now().timestamp() as f64;
    assert!((now - seen).abs() < 600.0, "last seen {seen}, now {now}");

    let building = json!({"state": "building", "message": "building the base kernel"});
    let a = app.job_call(machine, &job, "state", building).await;
    assert!(a.status.is_success(), "{a:?}");
    assert_eq!(jobs(&scrape(&app).await, "building"), 1.0);

    app.upload_all(machine, &job).await;
    app.finish_done(machine, &job).await;
    // An admin drains it: the scrape shows it.
    let a = app.steer("m1", "drain", "").await;
    assert!(a.status.is_success(), "{a:?}");
    let done = scrape(&app).await;
    assert_eq!(state(&done, "draining"), Some(1.0));
    assert_eq!(state(&done, "active"), Some(0.0));
    assert_eq!(jobs(&done, "done"), 1.0);
    assert_eq!(jobs(&done, "building"), 0.0);
    assert_eq!(
        openmetrics::value(&done, "patchperf_machine_job", &[("machine", "m1")]),
        Some(0.0)
    );

    // The requests that moved it, each under its declared route.
    let claims = openmetrics::value(
        &done,
        "patchperf_http_requests_total",
        &[
            ("method", "POST"),
            ("route", "/api/v1/jobs/claim"),
            ("status", "200"),
        ],
    );
    assert_eq!(claims, Some(1.0));
    let finishes = openmetrics::value(
        &done,
        "patchperf_http_requests_total",
        &[("route", "/api/v1/jobs/{id}/finish"), ("status", "200")],
    );
    assert_eq!(finishes, Some(1.0));
    let latency = openmetrics::value(
        &done,
        "patchperf_http_request_duration_seconds_count",
        &[("method", "POST"), ("route", "/api/v1/jobs/claim")],
    );
    assert_eq!(latency, Some(1.0));
    // Every background worker and the outbox have their series even when
    // idle; the pool shows the connections this server holds.
    assert!(openmetrics::value(&done, "patchperf_db_pool_max_connections", &[]).unwrap() >= 1.0);
    assert!(
        done.iter().all(|s| s.value.is_finite()),
        "a sample that is not a number"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_paths_own_words_never_become_a_series(pool: PgPool) {
    let app = TestApp::new(pool).await;
    for path in ["/no/such/page", "/comparisons/99999", "/comparisons/1%0a2"] {
        let _ = app.get(path).await;
    }
    let samples = scrape(&app).await;
    let routes: Vec<&str> = samples
        .iter()
        .filter(|s| s.name == "patchperf_http_requests_total")
        .map(|s| s.labels["route"].as_str())
        .collect();
    assert!(routes.contains(&"unmatched"), "{routes:?}");
    assert!(routes.contains(&"/comparisons/{id}"), "{routes:?}");
    assert!(
        routes
            .iter()
            .all(|r| !r.contains("99999") && !r.contains("no/such")),
        "{routes:?}"
    );
}

/// The `x-request-id` of the answer to a `GET /healthz` that gave `given`.
async fn id_answered(app: &TestApp, given: &str) -> String {
    let req = axum::http::Request::builder()
        .uri("/healthz")
        .header("x-request-id", given)
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = tower::ServiceExt::oneshot(app.app.clone(), req)
        .await
        .unwrap();
    resp.headers()["x-request-id"].to_str().unwrap().to_string()
}

#[sqlx::test(migrations = "../migrations")]
async fn every_answer_carries_a_request_id_and_a_proxys_plain_one_is_kept(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = id_answered(&app, "a\"quote").await;
    assert!(!id.contains('"') && !id.is_empty(), "{id}");
    assert_eq!(id_answered(&app, "lb-7f3a").await, "lb-7f3a");
}

/// The database gone: a scrape still answers, with this process's own
/// series and `patchperf_database_up` 0, instead of 500 (issue 42: the
/// counters vanished with the database). Read on the `--metrics-listen`
/// router, whose answer needs no token, so no token lookup is asked of
/// the database.
#[sqlx::test(migrations = "../migrations")]
async fn a_scrape_without_the_database_says_so_and_keeps_the_rest(pool: PgPool) {
    use tower::ServiceExt;
    let app = TestApp::new(pool.clone()).await;
    let exporter = patchperf_server::http::prometheus::exporter(app.state.clone());
    let read = |exporter: axum::Router| async move {
        let answer = exporter
            .oneshot(
                axum::http::Request::get("/metrics")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let body = axum::body::to_bytes(answer.into_body(), 1 << 24)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    };
    let text = read(exporter.clone()).await;
    let samples = openmetrics::parse(&text);
    assert_eq!(
        openmetrics::value(&samples, "patchperf_database_up", &[]),
        Some(1.0)
    );
    assert!(openmetrics::value(&samples, "patchperf_jobs", &[("state", "queued")]).is_some());
    assert_eq!(text.matches("# EOF").count(), 1, "{text}");

    pool.close().await;
    let text = read(exporter).await;
    let samples = openmetrics::parse(&text);
    assert_eq!(
        openmetrics::value(&samples, "patchperf_database_up", &[]),
        Some(0.0)
    );
    assert!(openmetrics::value(&samples, "patchperf_jobs", &[("state", "queued")]).is_none());
    assert!(openmetrics::value(&samples, "patchperf_db_pool_max_connections", &[]).is_some());
    assert!(text.ends_with("# EOF\n"), "{text}");
}

/// The alerts shipped in `deploy/prometheus/` pass their own
/// `promtool test rules`, and every series they name is one this server
/// exports (a renamed metric would leave an alert that never fires).
#[sqlx::test(migrations = "../migrations")]
async fn the_shipped_alerts_pass_promtool_and_name_only_exported_series(pool: PgPool) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus");
    let out = std::process::Command::new("promtool")
        .args(["test", "rules", "patchperf.rules.test.yml"])
        .current_dir(&dir)
        .output()
        .expect("promtool (apt-get install prometheus; ./patchperf test installs it)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let app = TestApp::new(pool).await;
    app.register("rack-1").await;
    // The workers `serve` starts, so theirs are among the series.
    patchperf_server::domain::spawn_workers(&app.state).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let text = loop {
        let a = app
            .send(Method::GET, "/metrics", Some(&app.admin), &[], None)
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        if a.body
            .contains("patchperf_worker_last_ok_timestamp_seconds{")
            || std::time::Instant::now() > deadline
        {
            break a.body.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    // Each family is described (`# TYPE name type`) even before it has a
    // sample; a counter's samples carry `_total`.
    let families: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let exported = |name: &str| {
        families.iter().any(|&(family, kind)| {
            family == name || (kind == "counter" && name.strip_suffix("_total") == Some(family))
        })
    };
    let rules = std::fs::read_to_string(dir.join("patchperf.rules.yml")).unwrap();
    let mut named: Vec<&str> = rules
        .match_indices("patchperf_")
        .map(|(at, _)| {
            let rest = &rules[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    assert!(named.len() >= 6, "{named:?}");
    for name in named {
        assert!(
            exported(name),
            "the alerts name {name}, which /metrics has not:\n{text}"
        );
    }
}

/// Asked for `text/plain`, `/metrics` answers Prometheus' classic text
/// format, which `promtool check metrics` reads without a complaint: every
/// counter typed as one (OpenMetrics describes the family, which a classic
/// parser takes for another metric and calls the samples untyped).
#[sqlx::test(migrations = "../migrations")]
async fn the_classic_text_format_passes_promtool(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("rack-1").await;
    patchperf_server::domain::spawn_workers(&app.state).unwrap();
    // A request or two, so the counters have samples.
    app.get("/healthz").await;
    let a = app
        .send(
            Method::GET,
            "/metrics",
            Some(&app.admin),
            &[("accept", "text/plain; version=0.0.4".into())],
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert!(
        !a.body.contains("# EOF") && !a.body.contains("# UNIT"),
        "{}",
        a.body
    );
    assert!(
        a.body
            .contains("# TYPE patchperf_http_requests_total counter"),
        "{}",
        a.body
    );
    // What an admin alerts on beside the queue: which build, how old the
    // oldest queued job is, why jobs fail, and the process itself.
    for series in [
        "patchperf_build_info{version=\"",
        "patchperf_oldest_queued_job_age_seconds 0",
        "patchperf_job_failures{reason=\"patch does not apply\"} 0",
        "process_resident_memory_bytes ",
        "process_cpu_seconds_total ",
        "process_open_fds ",
        "process_start_time_seconds ",
    ] {
        assert!(a.body.contains(series), "{series}: {}", a.body);
    }
    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (apt-get install prometheus; ./patchperf test installs it)");
    use std::io::Write;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(a.body.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "{said}\n{}",
        a.body
    );
    // Without that wish: OpenMetrics, as Prometheus asks for first.
    let a = app
        .send(Method::GET, "/metrics", Some(&app.admin), &[], None)
        .await;
    assert!(a.body.ends_with("# EOF\n"), "{}", a.body);
}
