//! Stored reports: built once per change of their inputs and kept in the
//! database, so a restarted server (or a second one) serves them without
//! building; built again when, and only when, a run arrives or the
//! machine's noise floor changes.

use patchperf_server::domain::report;
use patchperf_server::{AppState, Config, db};

use crate::helpers::{TestApp, faster};

/// Reports built by the app so far.
fn builds(state: &AppState) -> u64 {
    state.telemetry.report_builds()
}

/// Comparison `id`'s report as server `state` serves it, in JSON.
async fn report_json(state: &AppState, id: i64) -> serde_json::Value {
    let c = db::comparisons::find(&state.db, id).await.unwrap().unwrap();
    let built = report::load_shared(state, &c).await.unwrap();
    serde_json::to_value(report::verdict::verdict_view(&built, String::new())).unwrap()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_second_server_serves_the_stored_report_without_building(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    app.run_all(lab, faster).await;
    let first = report_json(&app.state, id).await;
    assert_eq!(builds(&app.state), 1);

    // A restarted server: nothing in memory, everything in the database.
    let other = AppState::new(pool, Config::default());
    let again = report_json(&other, id).await;
    assert_eq!(builds(&other), 0, "the stored report was built again");
    assert_eq!(again, first, "the stored report reads back exactly");
    // Its pages, text and JSON read it too.
    let text = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert!(text.1.contains("5.1% improvement"), "{}", text.1);
    assert_eq!(builds(&app.state), 1);
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_run_rebuilds_its_own_comparison_only(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let (lab, lab2) = (app.register("lab").await, app.register("lab2").await);
    let done = app.submit("[PATCH] fs: a dup win", "lab2", &[1], 3).await;
    app.run_all(lab2, faster).await;
    let id = app.submit("[PATCH] fs: another win", "lab", &[1], 3).await;
    let spec = app.claim(lab).await.unwrap();
    app.run_job(lab, &spec, &[1], faster, true).await;
    // /healthz shows the builder's backlog.
    assert_eq!(app.get_json("/healthz").await["reports_to_build"], 2);
    assert_eq!(app.build_reports().await, 2);
    assert_eq!(app.get_json("/healthz").await["reports_to_build"], 0);
    let built = builds(&app.state);
    // Reading everything again builds nothing.
    for c in [done, id] {
        report_json(&app.state, c).await;
        let (status, _) = app.get(&format!("/comparisons/{c}")).await;
        assert!(status.is_success());
    }
    assert_eq!(app.build_reports().await, 0);
    assert_eq!(builds(&app.state), built);

    // One run of `id` arrives. `id` is still running and its report was
    // built a moment ago: the builder lets it wait, so runs arriving one
    // after another cost a build per interval, not one each.
    let spec = app.claim(lab).await.unwrap();
    let boot = spec.boots[0];
    let ops = faster(boot.side, boot.seq, 1);
    app.upload(lab, &spec, boot, crate::helpers::run_result(1, ops))
        .await;
    assert_eq!(app.build_reports().await, 0, "built again at once");
    // Once the interval has passed, it takes `id` alone and builds it
    // once; what readers get then has the run.
    sqlx::query("UPDATE comparison_reports SET built_at = built_at - interval '1 minute'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(app.build_reports().await, 1);
    assert_eq!(builds(&app.state), built + 1);
    let view = report_json(&app.state, id).await;
    let runs = &view["reports"][0];
    assert_eq!(
        runs["base_runs"].as_u64().unwrap() + runs["patched_runs"].as_u64().unwrap(),
        3
    );
    assert_eq!(
        builds(&app.state),
        built + 1,
        "served from what the builder stored"
    );
    // The same upload again stores nothing and flags nothing.
    app.upload(lab, &spec, boot, crate::helpers::run_result(1, ops))
        .await;
    assert_eq!(app.build_reports().await, 0);
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_new_noise_floor_rebuilds_its_machines_comparisons_only(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let (lab, lab2) = (app.register("lab").await, app.register("lab2").await);
    let here = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    app.run_all(lab, faster).await;
    let elsewhere = app.submit("[PATCH] fs: a dup win", "lab2", &[1], 3).await;
    app.run_all(lab2, faster).await;
    app.build_reports().await;
    let stored_before = report_json(&app.state, here).await;
    let page = format!("/comparisons/{here}");
    let (_, page_before) = app.get(&page).await;
    let json = format!("/api/v1/comparisons/{here}");
    let json_before = app.get_json(&json).await;
    assert_eq!(app.get_json(&json).await, json_before);
    assert_eq!(
        app.get(&page).await.1,
        page_before,
        "rendered once, served again"
    );
    let built = builds(&app.state);

    // An A/A comparison finishes on `lab`: its own report and that of the
    // one A/B comparison judged against its floor are built again; `lab2`'s
    // is not.
    let aa = app.submit_aa("lab", 3).await;
    app.run_all(lab, |_, seq, _| {
        100_000.0 * (1.0 + 0.001 * f64::from(seq % 2))
    })
    .await;
    let flagged: Vec<i64> =
        sqlx::query_scalar("SELECT comparison_id FROM stale_reports ORDER BY 1")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(flagged, [here, aa]);
    app.build_reports().await;
    assert_eq!(builds(&app.state) - built, 2, "the A/A and `here`");
    let now = report_json(&app.state, here).await;
    assert_ne!(now, stored_before, "judged against the new floor");
    assert!(
        now["reports"][0]["header"]["delta_source"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("A/A comparison {aa}"))),
        "{now:#}"
    );
    // The page kept from before goes with the report it came from.
    let (_, page_after) = app.get(&page).await;
    assert_ne!(page_after, page_before);
    let json_after = app.get_json(&json).await;
    assert_ne!(json_after["verdict"], json_before["verdict"]);
    assert_eq!(json_after["verdict"]["reports"], now["reports"]);
    assert!(
        page_after.contains(&format!("A/A comparison {aa}")),
        "{page_after}"
    );
    report_json(&app.state, elsewhere).await;
    assert_eq!(builds(&app.state) - built, 2, "`elsewhere` was rebuilt");
}

/// A report stored by a server without `--public-url` carries relative
/// links; the same server restarted with one serves absolute links from
/// it, in the text and in the JSON, without building it again.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn links_are_resolved_when_a_stored_report_is_served(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    app.run_all(lab, faster).await;
    app.build_reports().await;

    let linked = TestApp::with_config(
        pool,
        Config {
            public_url: Some("https://perf.example.org/".into()),
            ..Config::default()
        },
    )
    .await;
    let page = format!("https://perf.example.org/comparisons/{id}");
    let (_, text) = linked
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert!(text.contains(&format!("\nreport: {page}\n")), "{text}");
    let json = linked.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(json["verdict"]["reports"][0]["header"]["report_url"], page);
    assert_eq!(builds(&linked.state), 0, "served from the stored report");
}
