//! A machine belongs to the runner token that registered it: another runner
//! token can neither take its name nor act on its leased jobs, even naming
//! its machine id and attempt; only an admin (or revoking the owner) moves
//! it.

use axum::http::StatusCode;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{TestApp, inventory, run_result};

async fn owner_of(app: &TestApp, machine: &str) -> String {
    sqlx::query_scalar(
        "SELECT t.name FROM machines m JOIN tokens t ON t.id = m.token_id WHERE m.name = $1",
    )
    .bind(machine)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn another_runner_token_cannot_take_over_a_machine_or_its_job(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(m1).await.unwrap();
    let r2 = app.create_token("runner", "other-lab").await;

    // Registering m1's name with another runner token is refused and
    // changes nothing.
    let register = json!({ "name": "m1", "inventory": inventory("m1") });
    let a = app.post("/api/v1/runner/register", &r2, register).await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{a:?}");
    let token_id = app.token_id("lab-runner").await;
    assert_eq!(
        a.error(),
        format!(
            "machine `m1` is registered under runner token `lab-runner` (id {token_id}); \
             another token cannot register it. An admin frees it by revoking that token \
             (`patchperf-server token revoke {token_id}` or POST /api/v1/tokens/{token_id}/revoke), \
             or takes it over by registering it with an admin token"
        )
    );
    assert_eq!(owner_of(&app, "m1").await, "lab-runner");
    assert_eq!(app.count("machines").await, 1);

    // Naming m1 and the current attempt does not make r2 the lease holder.
    let boot = job.boots[0];
    let calls = [
        ("heartbeat", json!({})),
        (
            "state",
            json!({"state": "building", "message": "fake", "log_tail": "fake"}),
        ),
        (
            "runs",
            json!({ "boot": boot, "result": run_result("open1", 1) }),
        ),
        (
            "finish",
            json!({"outcome": "failed", "reason": "build-failed", "detail": "fake"}),
        ),
    ];
    for (action, body) in &calls {
        let a = app
            .job_call_as(&r2, m1, job.job_id, job.attempt, action, body.clone())
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{action}: {a:?}");
        assert!(
            a.error().contains("registered under another token"),
            "{action}: {}",
            a.error()
        );
    }
    assert_eq!(app.count("runs").await, 0);
    let state: String = sqlx::query_scalar("SELECT state FROM jobs WHERE id = $1")
        .bind(job.job_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "claimed");

    // r1 keeps its machine and its job.
    let hb = app.job_call(m1, &job, "heartbeat", json!({})).await;
    assert_eq!(hb.status, StatusCode::OK, "{hb:?}");
    app.upload_all(m1, &job).await;
    app.finish_done(m1, &job).await;
    assert_eq!(app.register("m1").await, m1);
    assert_eq!(owner_of(&app, "m1").await, "lab-runner");
}

#[sqlx::test(migrations = "../migrations")]
async fn an_admin_moves_a_machine_by_revoking_its_token_or_registering_it(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let r2 = app.create_token("runner", "other-lab").await;

    // An admin token may register (take over) any machine.
    let admin = app.admin.clone();
    assert_eq!(app.register_with("m1", &admin).await, m1);
    assert_eq!(owner_of(&app, "m1").await, "operator");

    // A machine whose token was revoked is free for the next runner token.
    let m2 = app.register("m2").await;
    app.revoke(app.token_id("lab-runner").await).await;
    assert_eq!(app.register_with("m2", &r2).await, m2);
    assert_eq!(owner_of(&app, "m2").await, "other-lab");
}
