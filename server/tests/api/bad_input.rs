//! Bad submissions get a 4xx naming the problem, and store nothing.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use patchperf_server::Config;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::{TestApp, comparison_request, test_config};

async fn assert_nothing_stored(app: &TestApp) {
    for table in ["comparisons", "patch_series", "patches", "jobs", "boots"] {
        assert_eq!(app.count(table).await, 0, "{table} has rows");
    }
}

async fn submit_raw(app: &TestApp, body: &str) -> crate::helpers::Answer {
    app.send(
        Method::POST,
        "/api/v1/comparisons",
        Some(&app.ci),
        &[],
        Some(Body::from(body.to_string())),
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn malformed_json_is_400_naming_the_problem(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = submit_raw(&app, "{\"base\": ").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().starts_with("malformed JSON body:"),
        "{}",
        a.error()
    );

    let mut missing = comparison_request(3, json!({}));
    missing.as_object_mut().unwrap().remove("runs");
    let a = submit_raw(&app, &missing.to_string()).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("missing field `runs`"), "{}", a.error());

    let a = submit_raw(
        &app,
        &comparison_request(3, json!({"colour": "red"})).to_string(),
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().contains("unknown field `colour`"),
        "{}",
        a.error()
    );

    let a = app
        .send(
            Method::POST,
            "/api/v1/comparisons",
            Some(&app.ci),
            &[],
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("JSON"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_oversized_body_is_413(pool: PgPool) {
    let config = Config {
        body_limit: 4096,
        ..test_config()
    };
    let app = TestApp::with_config(pool, config).await;
    let huge = format!("{}{}", crate::helpers::MBOX, "x".repeat(8192));
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({ "mbox": huge })),
        )
        .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(a.error().contains("too large"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn invalid_submissions_are_422_naming_the_field(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"mbox": "From: a <a@b>\nSubject: hi\n\nno diff here\n"}),
            "mbox contains no patch (no message with a diff in it)",
        ),
        (json!({"mbox": ""}), "mbox is empty"),
        (
            json!({"aa": true}),
            "an A/A comparison (aa: true) boots the base kernel on both sides; leave out mbox",
        ),
        (
            json!({"workloads": ["open1", "open4"]}),
            "unknown workload `open4`; known workloads: open1, open2, open3, open-enoent, open-creat, dup1, fstat, fstatat-empty, statx-empty",
        ),
        (
            json!({"workloads": []}),
            "workloads must name at least one of: open1, open2, open3, open-enoent, open-creat, dup1, fstat, fstatat-empty, statx-empty",
        ),
        (
            json!({"workloads": ["dup1", "dup1"]}),
            "workload `dup1` is listed twice",
        ),
        (
            json!({"runs": 2}),
            "runs is 2; a comparison needs 3 to 100 runs a side",
        ),
        (
            json!({"runs": 101}),
            "runs is 101; a comparison needs 3 to 100 runs a side",
        ),
        (
            json!({"machine": "nowhere"}),
            "unknown machine `nowhere`; GET /api/v1/machines lists the registered ones",
        ),
        (
            json!({"params": {"nr_task": [], "seconds": 5, "warmup_seconds": 1}}),
            "params.nr_task must list 1 to 16 task counts",
        ),
        (
            json!({"params": {"nr_task": [1], "seconds": 0, "warmup_seconds": 1}}),
            "params.seconds is 0; it must be 1 to 600 measured seconds",
        ),
        (
            json!({"base": {"kind": "tarball", "name": "../../etc/passwd"}}),
            "base.name \"../../etc/passwd\" must be a plain tarball name such as \"linux-source-6.1\"",
        ),
        (
            json!({"base": {"kind": "git", "url": "https://git.example.org/linux.git", "commit": ""}}),
            "base.commit \"\" must be a commit id, tag or branch",
        ),
        (
            json!({"config_fragment": "CONFIG_FOO=y\nrm -rf /\n"}),
            "config_fragment line \"rm -rf /\" is not `CONFIG_FOO=value` or `# CONFIG_FOO is not set`",
        ),
    ];
    for (extra, message) in cases {
        let a = app.try_submit(extra.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{extra}: {a:?}");
        assert_eq!(a.error(), message, "{extra}");
    }
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_bad_task_count_in_the_body_is_refused_when_reading_it(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(
                3,
                json!({"params": {"nr_task": ["150%"], "seconds": 5, "warmup_seconds": 1}}),
            ),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("params"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_endpoints_answer_json_404(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app.get("/api/v1/nothing-here").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(
        a.error(),
        "no such endpoint: /api/v1/nothing-here; see /api/v1/openapi.json"
    );
}
