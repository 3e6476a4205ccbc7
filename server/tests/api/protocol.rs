//! The runner protocol from a runner's side: register, claim in order, one
//! machine per comparison, long-polling, concurrent claims.

use std::collections::HashSet;

use axum::http::StatusCode;
use patchperf_common::protocol::{BaseSource, JobSpec};
use patchperf_common::run::MeasurementMode;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{MBOX, TestApp, inventory};

#[sqlx::test(migrations = "../migrations")]
async fn registering_again_by_name_updates_the_inventory(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let first = app.register("m1").await;
    let mut inv = inventory("m1");
    inv.nr_cpu = 64;
    inv.backends = vec![MeasurementMode::Kvm];
    let a = app
        .post(
            "/api/v1/runner/register",
            &app.runner,
            json!({ "name": "m1", "inventory": inv }),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["machine_id"], first);
    let m = &app.get("/api/v1/machines").await.json["machines"][0];
    assert_eq!(m["nr_cpu"], 64);
    assert_eq!(m["backends"], json!(["kvm"]));
    assert_eq!(app.count("machines").await, 1);

    let bad = app
        .post(
            "/api/v1/runner/register",
            &app.runner,
            json!({ "name": "m 1/..", "inventory": inventory("x") }),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[sqlx::test(migrations = "../migrations")]
async fn claiming_with_nothing_queued_answers_204(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    assert!(app.claim(machine).await.is_none());
    let a = app
        .post(
            "/api/v1/jobs/claim",
            &app.runner,
            json!({"machine_id": 4242, "wait_seconds": 0}),
        )
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.error().contains("register first"), "{}", a.error());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_claim_hands_out_everything_the_runner_needs(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app
        .submit(3, json!({ "config_fragment": "CONFIG_FOO=y\n# CONFIG_BAR is not set\n", "backend": "tcg-icount" }))
        .await;
    let job = app.claim(machine).await.unwrap();
    assert_eq!(job.comparison_id, id);
    assert_eq!(job.attempt, 1);
    assert_eq!(job.lease_seconds, 120);
    assert_eq!(
        job.base,
        BaseSource::Tarball {
            name: "linux-source-6.1".into()
        }
    );
    assert_eq!(job.mbox, MBOX);
    assert_eq!(
        job.patches_sha256,
        patchperf_common::digest::sha256_hex(MBOX.as_bytes())
    );
    assert_eq!(job.workloads, ["open1"]);
    assert_eq!(job.params.seconds, 5);
    assert_eq!(job.backend, Some(MeasurementMode::TcgIcount));
    assert_eq!(
        job.config_fragment.as_deref(),
        Some("CONFIG_FOO=y\n# CONFIG_BAR is not set\n")
    );
    assert_eq!(job.boots.len(), 2);
    assert_eq!(job.boots[0].seq, 0);

    let c = app.comparison(id).await;
    assert_eq!(c["status"], "running");
    assert_eq!(c["machine"]["name"], "m1");
    assert_eq!(c["machine"]["cpu_model"], "Intel(R) Xeon(R) Test CPU");
    assert_eq!(c["jobs"][0]["state"], "claimed");
    assert_eq!(c["jobs"][0]["attempt"], 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn jobs_are_claimed_in_boot_order_one_at_a_time_by_the_pinned_machine(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    app.submit(3, json!({})).await;

    let mut seen = Vec::new();
    for _ in 0..3 {
        let job = app
            .claim(m1)
            .await
            .expect("next job for the pinned machine");
        // While a job runs, the next one waits: the order must hold.
        assert!(app.claim(m1).await.is_none());
        // The comparison is m1's now; m2 gets nothing from it.
        assert!(app.claim(m2).await.is_none());
        app.upload_all(m1, &job).await;
        let a = app
            .job_call(m1, &job, "finish", json!({"outcome": "done"}))
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        seen.extend(job.boots.iter().map(|b| b.seq));
    }
    assert_eq!(seen, [0, 1, 2, 3, 4, 5]);
    assert!(app.claim(m1).await.is_none());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_comparison_pinned_at_submission_goes_only_to_that_machine(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    let id = app.submit(3, json!({ "machine": "m2" })).await;
    assert!(app.claim(m1).await.is_none());
    assert_eq!(app.claim(m2).await.unwrap().comparison_id, id);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_comparison_asking_for_a_backend_skips_machines_without_it(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let tcg_only = app.register("m1").await;
    app.submit(3, json!({ "backend": "kvm" })).await;
    assert!(app.claim(tcg_only).await.is_none());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_waiting_claim_is_answered_when_a_comparison_arrives(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let (job, id) = tokio::join!(app.claim_waiting(machine, 2), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        app.submit(3, json!({})).await
    });
    assert_eq!(
        job.expect("the waiting claim gets the new job")
            .comparison_id,
        id
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn two_runners_claiming_at_once_never_get_the_same_job(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    for _ in 0..8 {
        app.submit(3, json!({})).await;
    }
    // Each round both machines claim at the same time; every comparison
    // has exactly one claimable job until its running job finishes.
    let mut claimed: Vec<(i64, JobSpec)> = Vec::new();
    for _ in 0..6 {
        let (a, b) = tokio::join!(app.claim(m1), app.claim(m2));
        claimed.extend(a.map(|j| (m1, j)));
        claimed.extend(b.map(|j| (m2, j)));
    }
    let ids: HashSet<i64> = claimed.iter().map(|(_, j)| j.job_id).collect();
    assert_eq!(ids.len(), claimed.len(), "a job was handed out twice");
    // 8 comparisons, one claimable job each: all 8 handed out, none twice.
    assert_eq!(claimed.len(), 8);
    let mut owner = std::collections::HashMap::new();
    for (m, j) in &claimed {
        assert_eq!(*owner.entry(j.comparison_id).or_insert(*m), *m);
    }
    assert!(owner.values().any(|&m| m == m1) && owner.values().any(|&m| m == m2));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_waiting_claim_answers_204_at_once_when_the_server_shuts_down(pool: PgPool) {
    let config = patchperf_server::Config {
        claim_wait_max: std::time::Duration::from_secs(600),
        ..crate::helpers::test_config()
    };
    let state = patchperf_server::AppState::new(pool.clone(), config);
    let app = TestApp::with_state(state.clone()).await;
    let machine = app.register("m1").await;
    let (job, ()) = tokio::join!(app.claim_waiting(machine, 600), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        state.begin_shutdown();
    });
    // Without the shutdown it would have waited the full 600 s.
    assert!(job.is_none());
}
