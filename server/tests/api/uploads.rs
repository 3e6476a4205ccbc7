//! Run uploads are validated, stored once however often they are retried,
//! and projected into the tables a report reads; finishing checks that the
//! job really is complete.

use axum::http::StatusCode;
use patchperf_common::protocol::JobState;
use patchperf_common::run::{RunResult, Series};
use patchperf_server::db;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{TestApp, run_result};

#[sqlx::test(migrations = "../migrations")]
async fn an_upload_retried_is_stored_once(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let body = json!({ "boot": job.boots[0], "result": run_result("open1", 2) });

    let first = app.job_call(machine, &job, "runs", body.clone()).await;
    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(first.json["stored"], true);
    let again = app.job_call(machine, &job, "runs", body).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again.json,
        json!({ "run_id": first.json["run_id"], "stored": false })
    );

    assert_eq!(app.count("runs").await, 1);
    assert_eq!(app.count("metric_values").await, 2);
    assert_eq!(app.count("unsupported_metrics").await, 1);
    assert_eq!(app.count("run_series").await, 1);

    // One indexed query gives the report every value of the comparison.
    let values = db::runs::report_values(&app.pool, id).await.unwrap();
    let side = job.boots[0].side.as_str();
    let got: Vec<(&str, &str, i32, &str, f64)> = values
        .iter()
        .map(|v| {
            (
                v.side.as_str(),
                v.workload.as_str(),
                v.nr_task,
                v.name.as_str(),
                v.value,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (side, "open1", 2, "will-it-scale.per_process_ops", 1005.0),
            (side, "open1", 2, "will-it-scale.workload", 4020.0),
        ]
    );
    let points: Vec<f64> = sqlx::query_scalar("SELECT points FROM run_series")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(points, [2000.0, 2020.0]);
    let c = app.comparison(id).await;
    assert_eq!(c["runs"][side], 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_run_is_stored_once_each_part_in_its_own_place(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let mut run = run_result("open1", 2);
    // Series of different lengths, one of none, go in one statement.
    run.series = [
        ("a", vec![1.0, 2.0]),
        ("b", vec![]),
        ("c", vec![3.0, 4.0, 5.5]),
    ]
    .into_iter()
    .map(|(name, points)| Series {
        name: format!("perf-stat.ps.{name}"),
        interval_seconds: 0.5,
        points,
    })
    .collect();
    run.profile_event = Some("cpu-clock".into());
    run.warnings = vec!["perf: no PMU in the guest".into(), "second".into()];
    let body = json!({ "boot": job.boots[0], "result": run });
    let stored = app.job_call(machine, &job, "runs", body).await;
    assert_eq!(stored.status, StatusCode::CREATED, "{stored:?}");

    let series: Vec<(String, f64, Vec<f64>)> =
        sqlx::query_as("SELECT name, interval_seconds, points FROM run_series ORDER BY name")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let sent: Vec<(String, f64, Vec<f64>)> = run
        .series
        .iter()
        .map(|s| (s.name.clone(), s.interval_seconds, s.points.clone()))
        .collect();
    assert_eq!(series, sent);
    // What the report reads of a run comes from columns.
    let runs = db::runs::of_comparison(&app.pool, id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].profile_event.as_deref(), Some("cpu-clock"));
    assert_eq!(runs[0].warnings, run.warnings);
    // `result` keeps what no table holds and repeats nothing they hold.
    let kept: sqlx::types::Json<RunResult> = sqlx::query_scalar("SELECT result FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        kept.0,
        RunResult {
            metrics: Vec::new(),
            series: Vec::new(),
            ..run
        }
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_metric_value_must_agree_with_its_run(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let body = json!({ "boot": job.boots[0], "result": run_result("open1", 2) });
    app.job_call(machine, &job, "runs", body).await;
    // The copies of the run's comparison, side, workload and nr_task that
    // let a report read one index range are checked against the run.
    for (column, wrong) in [
        ("comparison_id", "comparison_id + 1"),
        (
            "side",
            "CASE side WHEN 'base' THEN 'patched' ELSE 'base' END",
        ),
        ("workload", "'dup1'"),
        ("nr_task", "nr_task + 1"),
    ] {
        let columns = ["comparison_id", "run_id", "side", "workload", "nr_task"];
        let copied: Vec<&str> = columns
            .iter()
            .map(|c| if *c == column { wrong } else { c })
            .collect();
        let copy = format!(
            "INSERT INTO metric_values ({}, name, value)
             SELECT {}, 'x', 1 FROM metric_values LIMIT 1",
            columns.join(", "),
            copied.join(", ")
        );
        let err = sqlx::query(&copy).execute(&app.pool).await.unwrap_err();
        assert!(
            err.to_string().contains("metric_values_run_fkey"),
            "{column}: {err}"
        );
    }
    assert_eq!(app.count("metric_values").await, 2);
}

#[sqlx::test(migrations = "../migrations")]
async fn uploads_that_do_not_fit_the_job_are_refused_and_store_nothing(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let boot = job.boots[0];
    let other_side = if boot.side.as_str() == "base" {
        "patched"
    } else {
        "base"
    };

    let cases = [
        (
            json!({ "boot": { "seq": 5, "side": "base" }, "result": run_result("open1", 1) }),
            format!(
                "boot 5 is not a boot of job {} (its boots are 0, 1)",
                job.job_id
            ),
        ),
        (
            json!({ "boot": { "seq": 0, "side": other_side }, "result": run_result("open1", 1) }),
            format!("boot 0 is a {} boot, not {other_side}", boot.side.as_str()),
        ),
        (
            json!({ "boot": boot, "result": run_result("dup1", 1) }),
            "workload `dup1` is not part of comparison 1 (it asks for open1)".to_string(),
        ),
        (
            json!({ "boot": boot, "result": run_result("open1", 3) }),
            "nr_task 3 is not one comparison 1 asks for (1, 2)".to_string(),
        ),
        (
            {
                let mut r = serde_json::to_value(run_result("open1", 1)).unwrap();
                r["metrics"][1]["name"] = json!("will-it-scale.per_process_ops");
                json!({ "boot": boot, "result": r })
            },
            "metric `will-it-scale.per_process_ops` appears twice".to_string(),
        ),
        (
            {
                let mut r = serde_json::to_value(run_result("open1", 1)).unwrap();
                r["mode"] = json!("thread");
                json!({ "boot": boot, "result": r })
            },
            "run is in thread mode but comparison 1 asks for process mode".to_string(),
        ),
    ];
    for (body, message) in cases {
        let a = app.job_call(machine, &job, "runs", body).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
        assert_eq!(a.error(), message);
    }
    // A number JSON cannot hold as a finite f64.
    let text = serde_json::to_string(&json!({ "boot": boot, "result": run_result("open1", 1) }))
        .unwrap()
        .replace("1005.0", "1e999");
    let a = app
        .send(
            axum::http::Method::POST,
            &format!("/api/v1/jobs/{}/runs", job.job_id),
            Some(&app.runner),
            &[
                (
                    patchperf_common::protocol::MACHINE_HEADER,
                    machine.to_string(),
                ),
                (patchperf_common::protocol::ATTEMPT_HEADER, "1".to_string()),
            ],
            Some(axum::body::Body::from(text)),
        )
        .await;
    assert!(a.status.is_client_error(), "{a:?}");
    assert_eq!(app.count("runs").await, 0);
    assert_eq!(app.count("metric_values").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_job_is_done_only_when_every_boot_has_every_workload(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app
        .submit(3, json!({ "workloads": ["open1", "dup1"] }))
        .await;
    let job = app.claim(machine).await.unwrap();
    let a = app
        .job_call(
            machine,
            &job,
            "runs",
            json!({ "boot": job.boots[0], "result": run_result("open1", 1) }),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);

    let early = app
        .job_call(machine, &job, "finish", json!({"outcome": "done"}))
        .await;
    assert_eq!(early.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        early.error(),
        format!(
            "job {} cannot be done: no run uploaded for boot 0 dup1, boot 1 open1, boot 1 dup1; \
             upload them or finish as failed (no-results)",
            job.job_id
        )
    );
    app.upload_all(machine, &job).await;
    let done = app
        .job_call(
            machine,
            &job,
            "finish",
            json!({"outcome": "done", "log_tail": "bye"}),
        )
        .await;
    assert_eq!(done.status, StatusCode::OK, "{done:?}");
    assert_eq!(
        done.json,
        json!({ "state": "done", "comparison_status": "running" })
    );
    // A finish retried after a lost answer gets the same answer.
    let again = app
        .job_call(machine, &job, "finish", json!({"outcome": "done"}))
        .await;
    assert_eq!(again.status, StatusCode::OK);
    // But nothing more may be uploaded to a finished job.
    let late = app
        .job_call(
            machine,
            &job,
            "runs",
            json!({ "boot": job.boots[0], "result": run_result("open1", 2) }),
        )
        .await;
    assert_eq!(late.status, StatusCode::CONFLICT);
    assert_eq!(
        late.error(),
        format!("job {} is done, not leased to anyone", job.job_id)
    );

    let c = app.comparison(id).await;
    assert_eq!(c["jobs"][0]["state"], "done");
    assert_eq!(
        c["jobs"][0]["runs"],
        json!({"base": 4, "patched": 4, "expected_per_side": 4})
    );
    assert_eq!(
        c["runs"],
        json!({"base": 4, "patched": 4, "expected_per_side": 12})
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn finishing_every_job_completes_the_comparison(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    while let Some(job) = app.claim(machine).await {
        app.upload_all(machine, &job).await;
        app.job_call(machine, &job, "finish", json!({"outcome": "done"}))
            .await;
    }
    let c = app.comparison(id).await;
    assert_eq!(c["status"], "done");
    assert!(c["finished_at"].is_string());
    assert_eq!(
        c["runs"],
        json!({"base": 6, "patched": 6, "expected_per_side": 6})
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_patch_that_does_not_apply_fails_the_whole_comparison(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let a = app
        .job_call(
            machine,
            &job,
            "finish",
            json!({"outcome": "failed", "reason": "patch-does-not-apply",
                   "detail": "fs/open.c: hunk #1 FAILED", "log_tail": "error: patch failed"}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["comparison_status"], "failed");
    let c = app.comparison(id).await;
    assert_eq!(c["status"], "failed");
    let j0 = &c["jobs"][0];
    assert_eq!(j0["failure"]["reason"], "patch-does-not-apply");
    assert_eq!(j0["failure"]["reason_text"], "patch does not apply");
    assert_eq!(j0["failure"]["detail"], "fs/open.c: hunk #1 FAILED");
    assert_eq!(j0["log_tail"], "error: patch failed");
    assert_eq!(
        c["jobs"][2]["failure"]["detail"],
        "not run: job 0 failed: patch does not apply: fs/open.c: hunk #1 FAILED"
    );
    assert!(app.claim(machine).await.is_none());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_failed_boot_fails_one_job_and_the_comparison_goes_on(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let a = app
        .job_call(machine, &job, "finish", json!({"outcome": "failed", "reason": "boot-failed", "detail": "no console output in 300 s"}))
        .await;
    assert_eq!(a.json["comparison_status"], "running");
    let next = app.claim(machine).await.expect("the next job still runs");
    assert_eq!(next.boots[0].seq, 2);
    assert_eq!(
        app.comparison(id).await["jobs"][0]["failure"]["reason_text"],
        "boot failed"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn progress_states_are_recorded_with_their_log_tail(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();
    let a = app
        .job_call(machine, &job, "state", json!({"state": "building", "message": "building patched kernel", "log_tail": "  CC fs/open.o"}))
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{a:?}");
    let c = app.comparison(id).await;
    assert_eq!(c["jobs"][0]["state"], "building");
    assert_eq!(c["jobs"][0]["message"], "building patched kernel");
    assert_eq!(c["jobs"][0]["log_tail"], "  CC fs/open.o");
    let events = db::events::for_job(&app.pool, job.job_id).await.unwrap();
    assert_eq!(events.last().unwrap().state, JobState::Building);
    assert_eq!(events.last().unwrap().log_tail, "  CC fs/open.o");

    let a = app
        .job_call(machine, &job, "state", json!({"state": "done"}))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(a.error().contains("not a progress state"), "{}", a.error());
}
