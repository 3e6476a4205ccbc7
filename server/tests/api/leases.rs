//! Leases: heartbeats extend them, a lease that runs out puts the job back
//! in the queue with the next attempt, the last attempt fails the job, and
//! only the holder of the current lease may act on a job.

use std::time::Duration;

use axum::http::StatusCode;
use patchperf_server::Config;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{TestApp, test_config};

async fn lease_left(app: &TestApp, job_id: i64) -> f64 {
    sqlx::query_scalar(
        "SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM jobs WHERE id = $1",
    )
    .bind(job_id)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_heartbeat_extends_the_lease(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    sqlx::query("UPDATE jobs SET lease_expires_at = now() + interval '5 seconds' WHERE id = $1")
        .bind(job.job_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let a = app.job_call(machine, &job, "heartbeat", json!({})).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!({ "lease_seconds": 120, "cancelled": false }));
    let left = lease_left(&app, job.job_id).await;
    assert!((110.0..=120.0).contains(&left), "{left} s left");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_lease_that_runs_out_requeues_the_job_for_the_next_attempt(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let first = app.claim(machine).await.unwrap();
    app.expire_leases().await;

    let second = app
        .claim(machine)
        .await
        .expect("the job is claimable again");
    assert_eq!(second.job_id, first.job_id);
    assert_eq!(second.attempt, 2);

    // The runner of the first attempt has lost the job.
    let stale = app.job_call(machine, &first, "heartbeat", json!({})).await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(
        stale.error(),
        format!(
            "job {} is in attempt 2; the lease of attempt 1 ran out",
            first.job_id
        )
    );
    let events: Vec<String> =
        sqlx::query_scalar("SELECT message FROM job_events WHERE job_id = $1 ORDER BY id")
            .bind(first.job_id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        events,
        [
            "claimed by m1",
            "lease of attempt 1 ran out; queued again",
            "claimed by m1"
        ]
    );
    assert_eq!(app.comparison(id).await["jobs"][0]["attempt"], 2);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_last_attempt_running_out_fails_the_job_and_the_next_one_runs(pool: PgPool) {
    let config = Config {
        max_attempts: 2,
        ..test_config()
    };
    let app = TestApp::with_config(pool, config).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    for attempt in 1..=2 {
        let job = app.claim(machine).await.unwrap();
        assert_eq!((job.boots[0].seq, job.attempt), (0, attempt));
        app.expire_leases().await;
    }
    // Attempts are used up: job 0 fails, job 1 is next.
    let next = app.claim(machine).await.unwrap();
    assert_eq!(next.boots[0].seq, 2);
    let c = app.comparison(id).await;
    assert_eq!(c["jobs"][0]["state"], "failed");
    assert_eq!(c["jobs"][0]["failure"]["reason"], "lease-expired");
    assert_eq!(
        c["jobs"][0]["failure"]["reason_text"],
        "lease expired too often"
    );
    assert_eq!(
        c["jobs"][0]["failure"]["detail"],
        "the lease ran out in all 2 attempts"
    );
    assert_eq!(c["status"], "running");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_short_lease_really_runs_out(pool: PgPool) {
    let config = Config {
        lease: Duration::from_millis(300),
        ..test_config()
    };
    let app = TestApp::with_config(pool, config).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let first = app.claim(machine).await.unwrap();
    assert!(app.claim(machine).await.is_none());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let again = app
        .claim(machine)
        .await
        .expect("requeued after the lease ran out");
    assert_eq!((again.job_id, again.attempt), (first.job_id, 2));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_lease_past_its_time_still_holds_until_someone_takes_it_back(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    app.expire_leases().await;
    // No claim or sweep ran yet, so the late heartbeat saves the lease.
    let a = app.job_call(machine, &job, "heartbeat", json!({})).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(lease_left(&app, job.job_id).await > 100.0);
}

#[sqlx::test(migrations = "../migrations")]
async fn only_the_machine_holding_the_lease_may_act_on_the_job(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    app.submit(3, json!({})).await;
    let job = app.claim(m1).await.unwrap();
    let upload = json!({ "boot": job.boots[0], "result": crate::helpers::run_result("open1", 1) });

    // Another machine of the same operator: the lease is not its.
    let a = app.job_call(m2, &job, "runs", upload.clone()).await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(
        a.error(),
        format!(
            "job {} is leased to another machine, not to `m2`",
            job.job_id
        )
    );

    // Another operator's token naming m1: not allowed to act for m1.
    let other = app.create_token("runner", "other-lab").await;
    let a = app
        .job_call_as(&other, m1, job.job_id, job.attempt, "runs", upload.clone())
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(
        a.error().contains("registered under another token"),
        "{}",
        a.error()
    );

    // Without the lease headers the call cannot even be read.
    let a = app
        .send(
            axum::http::Method::POST,
            &format!("/api/v1/jobs/{}/runs", job.job_id),
            Some(&app.runner),
            &[],
            Some(axum::body::Body::from(upload.to_string())),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("patchperf-machine"), "{}", a.error());

    // A job nobody holds.
    let a = app
        .job_call_as(&app.runner.clone(), m1, 9999, 1, "heartbeat", json!({}))
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);

    assert_eq!(app.count("runs").await, 0);
    assert_eq!(app.count("metric_values").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_call_on_a_job_never_claimed_says_so(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let never: i64 = sqlx::query_scalar(
        "SELECT id FROM jobs WHERE comparison_id = $1 ORDER BY seq DESC LIMIT 1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let a = app
        .job_call_as(
            &app.runner.clone(),
            machine,
            never,
            1,
            "heartbeat",
            json!({}),
        )
        .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(
        a.error(),
        format!("job {never} is queued, not leased to anyone (it was never claimed)")
    );

    // A job whose lease ran out is queued again, and the answer says that.
    let first = app.claim(machine).await.unwrap();
    app.expire_leases().await;
    let mut tx = app.pool.begin().await.unwrap();
    patchperf_server::domain::jobs::lifecycle::expire_leases(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let a = app.job_call(machine, &first, "heartbeat", json!({})).await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(
        a.error(),
        format!(
            "job {} is queued, not leased to anyone (its lease ran out and it was queued again)",
            first.job_id
        )
    );
}
