//! The CI API: submitting a comparison expands it into interleaved jobs;
//! it can be followed, listed and cancelled.

use axum::http::StatusCode;
use patchperf_common::run::Side;
use patchperf_server::domain::jobs::interleave;
use serde_json::json;
use sqlx::PgPool;

use patchperf_common::mbox::diff;
use patchperf_common::workload::map::WorkloadMap;

use crate::helpers::{TestApp, comparison_request};

#[sqlx::test(migrations = "../migrations")]
async fn submitting_answers_201_with_the_id_and_where_to_look(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({})),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let id = a.json["id"].as_i64().unwrap();
    assert_eq!(a.json["url"], format!("/api/v1/comparisons/{id}"));
    assert_eq!(a.json["report_url"], format!("/comparisons/{id}"));
    assert_eq!(a.json["workloads"], json!(["open1"]));
}

/// A submission that names no workload is measured on those the workload
/// map gives the files and functions its patches change, and says which.
#[sqlx::test(migrations = "../migrations")]
async fn a_submission_without_workloads_gets_the_map_s(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let stat = include_str!(
        "../../../examples/patches/003-vfs-mostly-undo-glibc-turning-fstat-into-fstatat-AT_EMPTY_PATH.patch"
    );
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({ "mbox": stat, "workloads": null })),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{:?}", a.json);
    let touched = vec!["fs/stat.c".to_string()];
    let want = WorkloadMap::derived()
        .select(&touched, &diff::functions(stat))
        .workloads;
    assert!(!want.is_empty());
    assert!(want.iter().all(|w| w.contains("stat")), "{want:?}");
    assert_eq!(a.json["workloads"], json!(want));
    let id = a.json["id"].as_i64().unwrap();
    let view = app.get(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view.json["workloads"], json!(want));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_comparison_becomes_one_job_per_randomly_ordered_pair_of_boots(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app.submit(5, json!({ "order_seed": 1234 })).await;
    let c = app.comparison(id).await;

    // The order is the seeded plan's: 5 blocks, each base+patched in some
    // order, numbered 0..10 across the comparison.
    let plan = interleave::plan(5, 1234);
    let expected = interleave::notation(plan.blocks.iter().flatten().copied());
    assert_eq!(c["boot_order"], expected);
    assert_eq!(expected.len(), 10);
    assert_eq!(c["order_seed"], 1234);

    let jobs = c["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 5);
    for (i, job) in jobs.iter().enumerate() {
        assert_eq!(job["seq"], i);
        assert_eq!(job["state"], "queued");
        assert_eq!(job["attempt"], 0);
        let boots = job["boots"].as_array().unwrap();
        assert_eq!(boots.len(), 2);
        assert_eq!(boots[0]["seq"], 2 * i);
        assert_eq!(boots[1]["seq"], 2 * i + 1);
        let sides: Vec<&str> = boots.iter().map(|b| b["side"].as_str().unwrap()).collect();
        let planned: Vec<&str> = plan.blocks[i].iter().map(|s: &Side| s.as_str()).collect();
        assert_eq!(sides, planned);
        assert!(sides.contains(&"base") && sides.contains(&"patched"));
    }
    assert_eq!(c["status"], "queued");
    // 5 boots a side × 1 workload × 2 task counts.
    assert_eq!(
        c["runs"],
        json!({ "base": 0, "patched": 0, "expected_per_side": 10 })
    );
    // No run stored yet: the report builder has nothing to judge.
    assert_eq!(c["verdict"]["overall"], "no results");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_series_is_kept_with_each_patch_subject_author_and_message_id(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app.submit(3, json!({})).await;
    let c = app.comparison(id).await;
    let messages = c["patches"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0]["subject"],
        "[PATCH 1/2] fs: skip a lookup in open"
    );
    assert_eq!(messages[0]["author"], "Kernel Hacker <hacker@example.org>");
    assert_eq!(
        messages[0]["message_id"],
        "20240101000000.1-hacker@example.org"
    );
    assert_eq!(messages[1]["subject"], "[PATCH 2/2] fs: and another");
    assert_eq!(
        c["patches"]["sha256"],
        patchperf_common::digest::sha256_hex(crate::helpers::MBOX.as_bytes())
    );
    // The same series submitted again is stored once.
    app.submit(3, json!({})).await;
    assert_eq!(app.count("patch_series").await, 1);
    assert_eq!(app.count("patches").await, 2);
}

/// The runner applies a series of mode changes (`git am` does), so the
/// server must take it: both read the mbox with the one shared parser.
#[sqlx::test(migrations = "../migrations")]
async fn a_series_that_only_changes_a_file_mode_is_accepted(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app
        .submit(3, json!({ "mbox": patchperf_testkit::mbox::MODE_ONLY }))
        .await;
    let c = app.comparison(id).await;
    let messages = c["patches"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["subject"], "[PATCH] fs: make open.c executable");
    assert_eq!(messages[0]["has_diff"], true);
}

#[sqlx::test(migrations = "../migrations")]
async fn listing_filters_by_status_machine_and_workload_and_pages(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("m1").await;
    let a = app.submit(3, json!({ "workloads": ["open1"] })).await;
    let b = app
        .submit(
            3,
            json!({ "workloads": ["dup1", "open1"], "machine": "m1" }),
        )
        .await;
    let c = app.submit(3, json!({ "workloads": ["fstat"] })).await;
    app.post(
        &format!("/api/v1/comparisons/{c}/cancel"),
        &app.ci,
        json!({}),
    )
    .await;

    let ids = |v: &serde_json::Value| -> Vec<i64> {
        v["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(&app.get("/api/v1/comparisons").await.json), [c, b, a]);
    assert_eq!(
        ids(&app.get("/api/v1/comparisons?status=queued").await.json),
        [b, a]
    );
    assert_eq!(
        ids(&app.get("/api/v1/comparisons?status=cancelled").await.json),
        [c]
    );
    assert_eq!(
        ids(&app.get("/api/v1/comparisons?machine=m1").await.json),
        [b]
    );
    assert_eq!(
        ids(&app.get("/api/v1/comparisons?workload=open1").await.json),
        [b, a]
    );

    let page1 = app.get("/api/v1/comparisons?limit=2").await.json;
    assert_eq!(ids(&page1), [c, b]);
    assert_eq!(page1["next_before"], b);
    let page2 = app
        .get(&format!("/api/v1/comparisons?limit=2&before={b}"))
        .await
        .json;
    assert_eq!(ids(&page2), [a]);
    assert_eq!(page2["next_before"], serde_json::Value::Null);
    let first = &app.get("/api/v1/comparisons?limit=1").await.json["comparisons"][0];
    assert_eq!(first["subject"], "[PATCH 1/2] fs: skip a lookup in open");

    let bad = app.get("/api/v1/comparisons?status=finished").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.error()
            .contains("queued, running, done, failed, cancelled")
    );
    let bad = app.get("/api/v1/comparisons?limit=0").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[sqlx::test(migrations = "../migrations")]
async fn cancelling_fails_the_queued_jobs_and_tells_the_runner_by_heartbeat(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("m1").await;
    let id = app.submit(3, json!({})).await;
    let job = app.claim(machine).await.unwrap();

    let a = app.cancel(id).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["status"], "cancelled");

    let c = app.comparison(id).await;
    assert_eq!(c["status"], "cancelled");
    let states: Vec<&str> = c["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["claimed", "failed", "failed"]);
    assert_eq!(c["jobs"][1]["failure"]["reason"], "cancelled");

    let hb = app.job_call(machine, &job, "heartbeat", json!({})).await;
    assert_eq!(hb.status, StatusCode::OK);
    assert_eq!(hb.json["cancelled"], true);
    let fin = app
        .job_call(
            machine,
            &job,
            "finish",
            json!({"outcome": "failed", "reason": "cancelled", "detail": "stopped"}),
        )
        .await;
    assert_eq!(fin.status, StatusCode::OK, "{fin:?}");
    assert_eq!(app.comparison(id).await["status"], "cancelled");
    assert!(app.claim(machine).await.is_none());

    let again = app.cancel(id).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        again.error(),
        format!("comparison {id} is already cancelled")
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn an_unknown_comparison_is_404(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app.get("/api/v1/comparisons/999").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.error(), "no comparison 999");
    let a = app.get("/api/v1/comparisons/abc").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
}

#[sqlx::test(migrations = "../migrations")]
async fn machines_are_listed_with_their_inventory(pool: PgPool) {
    let app = TestApp::new(pool).await;
    app.register("m2").await;
    app.register("m1").await;
    let a = app.get("/api/v1/machines").await;
    let machines = a.json["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 2);
    assert_eq!(machines[0]["name"], "m1");
    assert_eq!(machines[0]["nr_cpu"], 2);
    assert_eq!(machines[0]["backends"], json!(["tcg-icount", "tcg"]));
    assert!(machines[0].get("token_id").is_none());
}

#[sqlx::test(migrations = "../migrations")]
async fn the_series_downloads_as_submitted(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app.submit(3, json!({})).await;
    let a = app.get(&format!("/comparisons/{id}/series.mbox")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.body, crate::helpers::MBOX);
    let aa = app.submit(3, json!({ "aa": true, "mbox": "" })).await;
    let a = app.get(&format!("/comparisons/{aa}/series.mbox")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
    assert!(a.body.contains("it has no series"), "{}", a.body);
    let a = app.get("/comparisons/999/series.mbox").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
}
