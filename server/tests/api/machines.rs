//! The fleet an admin steers: a drained machine finishes the job in hand
//! and claims nothing new, a paused one claims nothing until resumed, a
//! retired one leaves the lists but keeps its history; a comparison may ask
//! for a pool of labelled machines instead of one; the machine list shows
//! state, the jobs in hand (several, when its agent holds jobs of two
//! comparisons at once), queue and last sign of life; and runner and server
//! refuse each other across protocol versions, saying which.

use axum::http::StatusCode;
use patchperf_common::protocol::{MACHINE_STATE_HEADER, PROTOCOL_VERSION};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::{TestApp, inventory};

/// The machine state a claim's 204 carried, if any.
fn held(a: &crate::helpers::Answer) -> Option<&str> {
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{a:?}");
    a.headers
        .get(MACHINE_STATE_HEADER)
        .map(|v| v.to_str().unwrap())
}

/// Machine `name` as `GET /api/v1/machines/{name}` shows it.
async fn machine(app: &TestApp, name: &str) -> Value {
    let a = app.get(&format!("/api/v1/machines/{name}")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json
}

#[sqlx::test(migrations = "../migrations")]
async fn a_drained_machine_finishes_the_job_in_hand_and_claims_nothing_new(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let id = app.submit(3, json!({ "machine": "m1" })).await;
    let job = app.claim(m1).await.expect("the first of three jobs");

    let a = app.steer("m1", "drain", "kernel upgrade").await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["state"], "draining");
    assert_eq!(a.json["state_note"], "kernel upgrade");
    assert_eq!(a.json["job"]["id"], job.job_id);
    assert_eq!(a.json["drained"], false);
    // Two jobs of the comparison wait for m1 alone.
    assert_eq!(a.json["queued"], 2);

    // The job in hand goes on to the end…
    app.upload_all(m1, &job).await;
    app.finish_done(m1, &job).await;
    // …and nothing new is handed out, with the reason.
    assert_eq!(held(&app.claim_as(m1, None).await), Some("draining"));
    let m = machine(&app, "m1").await;
    assert_eq!(
        (m["drained"].clone(), m["job"].clone()),
        (json!(true), Value::Null)
    );
    let c = app.comparison(id).await;
    assert_eq!(c["jobs"][1]["state"], "queued");
    // Whoever waits for the comparison is told why it does not move.
    let waiting = c["waiting"].as_str().unwrap();
    assert!(
        waiting
            .starts_with("an admin drained machine m1 (kernel upgrade); the remaining jobs wait"),
        "{waiting}"
    );

    let a = app.steer("m1", "resume", "").await;
    assert_eq!(a.json["state"], "active");
    assert_eq!(a.json["state_note"], "");
    let next = app
        .claim(m1)
        .await
        .expect("the second job after the resume");
    assert_eq!(next.comparison_id, id);
    assert_eq!(next.boots[0].seq, 2);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_paused_machine_claims_nothing_until_resumed_and_a_waiting_claim_wakes(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    let a = app.steer("m1", "pause", "bios update").await;
    assert_eq!(a.json["state"], "paused");
    app.submit(3, json!({})).await;

    assert_eq!(held(&app.claim_as(m1, None).await), Some("paused"));
    // The other machines go on: the pause is m1's alone.
    let list = app.get("/api/v1/machines").await.json;
    assert_eq!(list["queued_any"], 3);
    let job = app.claim(m2).await.expect("m2 is not paused");
    let list = app.get("/api/v1/machines").await.json;
    assert_eq!(list["machines"][0]["state"], "paused");
    assert_eq!(list["machines"][1]["state"], "active");
    assert_eq!(list["machines"][1]["job"]["id"], job.job_id);
    assert!(list["machines"][1]["heard_seconds_ago"].as_f64().unwrap() < 60.0);
    app.upload_all(m2, &job).await;
    app.finish_done(m2, &job).await;

    // A third comparison, pinned to m1: its claim waits, and the resume
    // wakes it well before the wait ends.
    let pinned = app.submit(3, json!({ "machine": "m1" })).await;
    let (claimed, _) = tokio::join!(app.claim_waiting(m1, 2), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        app.steer("m1", "resume", "").await
    });
    assert_eq!(claimed.expect("a job once resumed").comparison_id, pinned);

    let page = app.get("/machines").await;
    assert!(page.body.contains("machine-active"), "{}", page.body);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_retired_machine_leaves_the_lists_keeps_its_history_and_cannot_be_named(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    app.register("m2").await;
    let id = app.submit(3, json!({ "machine": "m1" })).await;
    let job = app.claim(m1).await.unwrap();

    // Work in flight: drain first.
    let a = app.steer("m1", "retire", "").await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{a:?}");
    assert!(a.error().contains("drain it"), "{}", a.error());
    assert_eq!(machine(&app, "m1").await["state"], "active");

    app.upload_all(m1, &job).await;
    app.finish_done(m1, &job).await;
    let a = app.steer("m1", "retire", "").await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(held(&app.claim_as(m1, None).await), Some("retired"));
    // Its unfinished comparison, whose boots must all come from m1, ends
    // (issue 42: it stayed running for good and `submit --wait` with it).
    let c = app.comparison(id).await;
    assert_eq!(c["status"], "cancelled", "{c:#}");
    let c = c.to_string();
    assert!(
        c.contains("the retirement of machine m1, which its boots must come from"),
        "{c}"
    );

    let names = |list: &Value| -> Vec<String> {
        list["machines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&app.get("/api/v1/machines").await.json), ["m2"]);
    let all = app.get("/api/v1/machines?retired=true").await.json;
    assert_eq!(names(&all), ["m1", "m2"]);
    assert!(!app.get("/machines").await.body.contains(">m1<"));
    assert!(
        app.get("/machines?retired=true")
            .await
            .body
            .contains(">m1<")
    );
    // Its history stays: the comparison, its page, its job.
    assert_eq!(app.comparison(id).await["machine"]["name"], "m1");
    let page = app.get("/machines/m1").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("retired"), "{}", page.body);

    let a = app.try_submit(json!({ "machine": "m1" })).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(a.error().contains("is retired"), "{}", a.error());

    // Registering again (a runner that was not told) keeps it retired.
    let a = app
        .post(
            "/api/v1/runner/register",
            &app.runner,
            json!({ "name": "m1", "inventory": inventory("m1") }),
        )
        .await;
    assert_eq!(a.json["state"], "retired");
    assert_eq!(app.steer("m1", "resume", "").await.json["state"], "active");
    app.submit(3, json!({ "machine": "m1" })).await;
    assert!(app.claim(m1).await.is_some());
}

#[sqlx::test(migrations = "../migrations")]
async fn only_an_admin_steers_a_machine_that_exists_with_a_one_line_note(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("m1").await;
    for token in [&app.runner, &app.ci] {
        let a = app
            .post("/api/v1/machines/m1/pause", token, json!({}))
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
    }
    let a = app.steer("m9", "drain", "").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
    assert!(a.error().contains("no machine named `m9`"), "{}", a.error());
    let long = "x".repeat(201);
    let a = app.steer("m1", "pause", &long).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    let a = app.steer("m1", "pause", "two%0Alines").await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert_eq!(machine(&app, "m1").await["state"], "active");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_runner_of_a_protocol_version_the_server_does_not_speak_is_refused_naming_both(
    pool: PgPool,
) {
    let app = TestApp::new(pool).await;
    let newer = PROTOCOL_VERSION + 1;
    let a = app
        .post(
            "/api/v1/runner/register",
            &app.runner,
            json!({ "name": "m1", "inventory": inventory("m1"), "protocol_version": newer }),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    let e = a.error();
    assert!(e.contains(&format!("protocol version {newer}")), "{e}");
    assert!(e.contains(&format!("version {PROTOCOL_VERSION}")), "{e}");
    assert!(e.contains("upgrade the server first"), "{e}");
    assert_eq!(app.count("machines").await, 0);

    // A runner from before versions (no field) speaks version 1, and is
    // told which versions the server speaks.
    let a = app
        .post(
            "/api/v1/runner/register",
            &app.runner,
            json!({ "name": "m1", "inventory": inventory("m1") }),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["protocol_version"], PROTOCOL_VERSION);
    assert_eq!(a.json["oldest_protocol_version"], 1);
    assert_eq!(a.json["state"], "active");
    let m1 = a.json["machine_id"].as_i64().unwrap();
    assert_eq!(machine(&app, "m1").await["protocol_version"], 1);

    // Claims say it too: a runner replaced after registering is caught.
    let a = app.claim_as(m1, Some(&newer.to_string())).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(
        a.error().contains("upgrade the server first"),
        "{}",
        a.error()
    );
    let a = app.claim_as(m1, Some("two")).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    assert_eq!(held(&app.claim_as(m1, None).await), None);
    assert_eq!(
        held(&app.claim_as(m1, Some(&PROTOCOL_VERSION.to_string())).await),
        None
    );

    let health = app.get("/healthz").await.json;
    assert_eq!(health["protocol_version"], PROTOCOL_VERSION);
}

/// Sets machine `name`'s labels as `token`; the answer.
async fn label(app: &TestApp, token: &str, name: &str, labels: Value) -> crate::helpers::Answer {
    app.send(
        axum::http::Method::PUT,
        &format!("/api/v1/machines/{name}/labels"),
        Some(token),
        &[],
        Some(axum::body::Body::from(
            json!({ "labels": labels }).to_string(),
        )),
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn a_comparison_asking_for_a_pool_runs_on_the_first_of_its_machines_to_claim(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    let m3 = app.register("m3").await;
    let a = app.try_submit(json!({ "pool": "fast" })).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(
        a.error().contains("no machine is in pool `fast`"),
        "{}",
        a.error()
    );

    let a = label(&app, &app.admin, "m2", json!(["x86", "fast", "fast"])).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["labels"], json!(["fast", "x86"]));
    label(&app, &app.admin, "m3", json!(["fast"])).await;
    let id = app.submit(3, json!({ "pool": "fast" })).await;
    assert_eq!(app.comparison(id).await["pool"], "fast");

    // Not in the pool: nothing. In it: the first to claim keeps it all.
    assert!(app.claim(m1).await.is_none());
    let job = app.claim(m3).await.expect("m3 is in the pool");
    assert_eq!(job.comparison_id, id);
    app.upload_all(m3, &job).await;
    app.finish_done(m3, &job).await;
    assert!(app.claim(m2).await.is_none());
    // Out of the pool now, m3 still finishes what it began.
    label(&app, &app.admin, "m3", json!([])).await;
    assert_eq!(app.claim(m3).await.unwrap().comparison_id, id);
    assert_eq!(app.comparison(id).await["machine"]["name"], "m3");

    let list = app.get("/api/v1/machines").await.json;
    assert_eq!(list["machines"][1]["labels"], json!(["fast", "x86"]));
    assert!(app.get("/machines").await.body.contains("fast, x86"));
    let _ = m2;
}

#[sqlx::test(migrations = "../migrations")]
async fn pools_and_labels_are_plain_words_set_by_an_admin(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("m1").await;
    let a = label(&app, &app.runner, "m1", json!(["fast"])).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
    let a = label(&app, &app.admin, "m9", json!(["fast"])).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
    let many: Vec<String> = (0..17).map(|i| format!("l{i}")).collect();
    for bad in [json!(many), json!(["Fast"]), json!(["a b"]), json!([""])] {
        let a = label(&app, &app.admin, "m1", bad.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {a:?}");
    }
    label(&app, &app.admin, "m1", json!(["fast"])).await;
    let a = app
        .try_submit(json!({ "pool": "fast", "machine": "m1" }))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(a.error().contains("not both"), "{}", a.error());
    let a = app.try_submit(json!({ "pool": "Fast" })).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    let a = app
        .try_submit(json!({ "pool": "fast", "backend": "kvm" }))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(a.error().contains("can measure with kvm"), "{}", a.error());
    // A retired machine is no pool's.
    app.steer("m1", "retire", "").await;
    let a = app.try_submit(json!({ "pool": "fast" })).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tracked_tree_and_a_followed_list_may_ask_for_a_pool(pool: PgPool) {
    let (repo, _) = crate::git_repo::linear(1);
    let mirrors = tempfile::tempdir().unwrap();
    let app = crate::bisections::app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap().to_string();
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    label(&app, &app.admin, "m2", json!(["fast"])).await;

    let mut body = crate::trees::tree_request(&url, "pooled");
    body["pool"] = json!("fast");
    let tree = crate::trees::add(&app, body).await["id"].as_i64().unwrap();
    crate::git_repo::commit_file(repo.path(), "fs/a.c", "int a;\n", "fs: a");
    let id = crate::trees::push(&app, tree).await["comparison_id"]
        .as_i64()
        .unwrap();
    // Each head's comparison asks for the tree's pool.
    assert_eq!(app.comparison(id).await["pool"], "fast");
    assert!(app.claim(m1).await.is_none());
    assert_eq!(app.claim(m2).await.unwrap().comparison_id, id);

    for (extra, why) in [
        (json!({ "pool": "slow" }), "no machine is in pool `slow`"),
        (json!({ "pool": "fast", "machine": "m2" }), "not both"),
    ] {
        let mut body = crate::trees::tree_request(&url, "refused");
        let mut list = json!({
            "name": "refused", "address": "linux-fsdevel@vger.kernel.org",
            "base_url": url, "base_branch": "master",
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
            list[k] = v.clone();
        }
        for (path, body) in [("/api/v1/trees", body), ("/api/v1/lists", list)] {
            let a = app.post(path, &app.ci, body).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {a:?}");
            assert!(a.error().contains(why), "{path}: {}", a.error());
        }
    }
    let list = crate::lists::follow(&app, &url, json!({ "pool": "fast" })).await;
    let stored: Option<String> = sqlx::query_scalar("SELECT pool FROM lists WHERE id = $1")
        .bind(list)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored.as_deref(), Some("fast"));
}

/// What `/metrics` says of machine `name`'s jobs: the newest it holds and
/// how many.
async fn held_metrics(app: &TestApp, name: &str) -> (Option<f64>, Option<f64>) {
    let a = app
        .send(
            axum::http::Method::GET,
            "/metrics",
            Some(&app.admin),
            &[],
            None,
        )
        .await;
    let samples = patchperf_testkit::openmetrics::parse(&a.body);
    let of = |metric: &str| {
        patchperf_testkit::openmetrics::value(&samples, metric, &[("machine", name)])
    };
    (
        of("patchperf_machine_job"),
        of("patchperf_machine_jobs_held"),
    )
}

#[sqlx::test(migrations = "../migrations")]
async fn a_machine_holding_jobs_of_two_comparisons_shows_both(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    app.submit(3, json!({})).await;
    app.submit(3, json!({})).await;
    // An agent with --parallel 2 claims again while its first job runs:
    // a comparison's next job waits for its first, so the other's comes.
    let first = app.claim(m1).await.expect("a job");
    let second = app.claim(m1).await.expect("the other comparison's job");
    assert_ne!(first.comparison_id, second.comparison_id);

    let m = machine(&app, "m1").await;
    let held: Vec<i64> = m["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    assert_eq!(held, [first.job_id, second.job_id], "{m:#}");
    assert_eq!(m["job"]["id"], second.job_id, "the last by id");
    assert_eq!(
        held_metrics(&app, "m1").await,
        (Some(second.job_id as f64), Some(2.0))
    );
    for page in ["/machines", "/machines/m1"] {
        let body = app.get(page).await.body;
        for job in [&first, &second] {
            assert!(
                body.contains(&format!("job {}</a> of", job.job_id)),
                "{page} lacks job {}: {body}",
                job.job_id
            );
        }
    }

    app.upload_all(m1, &first).await;
    app.finish_done(m1, &first).await;
    let m = machine(&app, "m1").await;
    assert_eq!(m["jobs"].as_array().unwrap().len(), 1, "{m:#}");
    assert_eq!(m["job"]["id"], second.job_id);
    assert_eq!(held_metrics(&app, "m1").await.1, Some(1.0));
}
