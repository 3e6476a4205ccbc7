//! A NUL character anywhere in a request is refused at the door with a 4xx
//! naming where it was (Postgres stores no U+0000 in text or jsonb, so it
//! would otherwise fail the write as a 500), nothing is written, and the
//! server goes on answering. Pages answer the refusal as a page.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use patchperf_common::protocol::{BootSlot, JobSpec, RunUpload};
use proptest::prelude::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

use crate::helpers::{TestApp, inventory, run_result};

/// Every table a refused request could have written to.
const TABLES: [&str; 11] = [
    "tokens",
    "machines",
    "patch_series",
    "patches",
    "comparisons",
    "jobs",
    "boots",
    "job_events",
    "runs",
    "metric_values",
    "run_series",
];

async fn counts(app: &TestApp) -> Vec<i64> {
    let mut counts = Vec::new();
    for table in TABLES {
        counts.push(app.count(table).await);
    }
    counts
}

/// The server still answers, reads included.
async fn assert_still_answering(app: &TestApp) {
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
    assert_eq!(app.get("/api/v1/comparisons").await.status, StatusCode::OK);
    assert_eq!(app.get("/").await.status, StatusCode::OK);
}

/// A machine holding the lease of a claimed job of a fresh comparison.
async fn claimed(app: &TestApp) -> (i64, JobSpec) {
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    (machine, job)
}

fn upload(boot: BootSlot, change: impl FnOnce(&mut Value)) -> Value {
    let mut body = serde_json::to_value(RunUpload {
        boot,
        result: run_result("open1", 1),
    })
    .unwrap();
    change(&mut body);
    body
}

#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_submission_is_422_naming_the_field(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let before = counts(&app).await;
    let mbox = crate::helpers::MBOX.replacen("Subject: ", "Subject: \0", 1);
    let cases = [
        (json!({ "mbox": mbox }), "`mbox`"),
        (
            json!({ "config_fragment": "CONFIG_FOO=y\0\n" }),
            "`config_fragment`",
        ),
        (json!({ "machine": "m\0" }), "`machine`"),
        (json!({ "workloads": ["open1", "\0"] }), "`workloads[1]`"),
        (
            json!({ "base": { "kind": "git", "url": "https://git.example.org/l\0.git", "commit": "v6.1" } }),
            "`base.url`",
        ),
    ];
    for (extra, at) in cases {
        let a = app.try_submit(extra.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{extra}: {a:?}");
        assert!(
            a.error()
                .starts_with(&format!("{at} contains a NUL character")),
            "{extra}: {}",
            a.error()
        );
    }
    assert_eq!(counts(&app).await, before);
    assert_still_answering(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_machine_or_token_name_is_refused(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let before = counts(&app).await;
    let mut inv = serde_json::to_value(inventory("m1")).unwrap();
    inv["cpu_model"] = json!("Xeon\0");
    for body in [
        json!({ "name": "m\u{0}1", "inventory": inventory("m1") }),
        json!({ "name": "m1", "inventory": inv }),
    ] {
        let a = app
            .post("/api/v1/runner/register", &app.runner, body.clone())
            .await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {a:?}");
        assert!(a.error().contains("NUL"), "{}", a.error());
    }
    let a = app
        .post(
            "/api/v1/tokens",
            &app.admin,
            json!({ "kind": "ci", "name": "ci\0" }),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert_eq!(counts(&app).await, before);
    assert_still_answering(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_state_message_or_log_tail_is_refused(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let (machine, job) = claimed(&app).await;
    let before = counts(&app).await;
    for body in [
        json!({ "state": "building", "message": "building\0", "log_tail": "" }),
        json!({ "state": "running", "message": "running open1", "log_tail": "[  0.1] console\0" }),
    ] {
        let a = app.job_call(machine, &job, "state", body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {a:?}");
    }
    let a = app
        .job_call(
            machine,
            &job,
            "finish",
            json!({ "outcome": "failed", "reason": "boot-failed", "detail": "no console", "log_tail": "\0" }),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(
        a.error().starts_with("`log_tail` contains"),
        "{}",
        a.error()
    );
    assert_eq!(counts(&app).await, before);
    let state: String = sqlx::query_scalar("SELECT state FROM jobs WHERE id = $1")
        .bind(job.job_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "claimed");
    // The job goes on as if nothing had been sent.
    let a = app
        .job_call(
            machine,
            &job,
            "state",
            json!({ "state": "building", "message": "building", "log_tail": "" }),
        )
        .await;
    assert!(a.status.is_success(), "{a:?}");
    assert_still_answering(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_run_is_422_naming_its_path(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let (machine, job) = claimed(&app).await;
    let boot = job.boots[0];
    let before = counts(&app).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            upload(boot, |b| {
                b["result"]["metrics"][1]["name"] = json!("will-it-scale.\0")
            }),
            "`result.metrics[1].name`",
        ),
        (
            upload(boot, |b| b["result"]["series"][0]["name"] = json!("\0")),
            "`result.series[0].name`",
        ),
        (
            upload(boot, |b| b["result"]["warnings"] = json!(["perf: \0"])),
            "`result.warnings[0]`",
        ),
        (
            upload(boot, |b| b["result"]["unsupported"] = json!(["x\0"])),
            "`result.unsupported[0]`",
        ),
    ];
    for (body, at) in cases {
        let a = app.job_call(machine, &job, "runs", body).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{at}: {a:?}");
        assert!(
            a.error()
                .starts_with(&format!("{at} contains a NUL character")),
            "{}",
            a.error()
        );
    }
    assert_eq!(counts(&app).await, before);
    // The same run without the NUL is stored.
    let a = app
        .job_call(machine, &job, "runs", upload(boot, |_| {}))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_still_answering(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_nul_in_a_query_or_path_is_400_and_pages_answer_a_page(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("m1").await;
    app.submit(3, json!({})).await;
    let before = counts(&app).await;

    let a = app.get("/api/v1/comparisons?machine=%00").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    assert!(
        a.error()
            .starts_with("query parameter `machine` contains a NUL"),
        "{}",
        a.error()
    );
    let a = app
        .get("/api/v1/comparisons?status=queued&workload=open1%00")
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");

    for path in ["/?machine=%00", "/?workload=a%00b", "/machines/m%001"] {
        let resp = app.get(path).await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST, "{path}: {resp:?}");
        assert!(resp.body.contains("<html"), "{path}: {}", resp.body);
        assert!(resp.body.contains("NUL character"), "{path}: {}", resp.body);
        let direct = app
            .app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let content_type = direct.headers()[header::CONTENT_TYPE].to_str().unwrap();
        assert!(
            content_type.starts_with("text/html"),
            "{path}: {content_type}"
        );
    }
    assert_eq!(counts(&app).await, before);
    assert_still_answering(&app).await;
}

/// Where in a JSON document a string can be: a value (by JSON pointer) or
/// a key of an object.
#[derive(Debug, Clone)]
enum Spot {
    Value(String),
    Key(String, String),
}

fn spots(value: &Value, at: &str, out: &mut Vec<Spot>) {
    match value {
        Value::String(_) => out.push(Spot::Value(at.to_string())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                spots(item, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                out.push(Spot::Key(at.to_string(), key.clone()));
                spots(item, &format!("{at}/{key}"), out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Writes `text` into `spot` of `body` (a key is renamed to it, keeping
/// its value); a spot an earlier rename moved is left alone.
fn put(body: &mut Value, spot: &Spot, text: String) {
    match spot {
        Spot::Value(at) => {
            if let Some(v) = body.pointer_mut(at) {
                *v = Value::String(text);
            }
        }
        Spot::Key(at, key) => {
            let fields = body.pointer_mut(at).and_then(Value::as_object_mut);
            if let Some(fields) = fields {
                if let Some(item) = fields.remove(key) {
                    fields.insert(text, item);
                }
            }
        }
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn nuls_anywhere_in_a_valid_upload_never_give_a_5xx(pool: PgPool) {
    let app = std::sync::Arc::new(TestApp::new(pool).await);
    let (machine, job) = claimed(&app).await;
    let valid = upload(job.boots[0], |b| {
        b["result"]["warnings"] = json!(["perf: multiplexed"]);
    });
    let mut all = Vec::new();
    spots(&valid, "", &mut all);
    let nuls = prop::collection::vec((any::<prop::sample::Index>(), ".{0,8}", ".{0,8}"), 1..4);
    let handle = tokio::runtime::Handle::current();
    let shared = app.clone();
    // proptest drives the cases from a blocking thread; each request runs
    // on the test's runtime.
    tokio::task::spawn_blocking(move || {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 64,
            ..ProptestConfig::default()
        });
        runner
            .run(&nuls, |nuls| {
                let mut body = valid.clone();
                let mut chosen: Vec<(Spot, String)> = nuls
                    .into_iter()
                    .map(|(i, before, after)| (i.get(&all).clone(), format!("{before}\0{after}")))
                    .collect();
                // Values first, then keys from the deepest out, so a rename
                // moves no spot still to be written.
                chosen.sort_by_key(|(s, _)| match s {
                    Spot::Value(_) => (false, std::cmp::Reverse(0)),
                    Spot::Key(at, _) => (true, std::cmp::Reverse(at.len())),
                });
                for (spot, text) in &chosen {
                    put(&mut body, spot, text.clone());
                }
                let a = handle.block_on(shared.job_call(machine, &job, "runs", body.clone()));
                prop_assert!(
                    a.status.is_client_error(),
                    "{} answered {}: {}",
                    body,
                    a.status,
                    a.body
                );
                Ok(())
            })
            .unwrap();
    })
    .await
    .unwrap();
    assert_eq!(app.count("runs").await, 0);
    assert_still_answering(&app).await;
}
