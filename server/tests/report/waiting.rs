//! A comparison that is not moving says what it waits for: its pinned
//! machine that stopped calling, or any runner at all.

use crate::helpers::TestApp;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_comparison_pinned_to_a_silent_machine_says_it_waits_for_it(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: waits", "lab", &[1], 3).await;
    let url = format!("/api/v1/comparisons/{id}");
    assert!(
        app.get_json(&url).await["waiting"].is_null(),
        "lab just registered"
    );

    sqlx::query("UPDATE machines SET last_seen = now() - interval '2 hours 5 minutes'")
        .execute(&pool)
        .await
        .unwrap();
    let waiting = app.get_json(&url).await["waiting"].clone();
    let waiting = waiting.as_str().expect("a silent machine is reported");
    assert!(
        waiting.starts_with(
            "machine lab last called the server 2 h 5 min ago; the remaining jobs wait for it"
        ),
        "{waiting}"
    );
    let (_, page) = app.get(&format!("/comparisons/{id}")).await;
    assert!(
        page.contains("waiting: machine lab last called the server 2 h 5 min ago"),
        "{page}"
    );

    // The machine calls again: nothing to report.
    assert!(app.claim(lab).await.is_some());
    assert!(app.get_json(&url).await["waiting"].is_null());
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn an_unclaimed_comparison_says_when_no_runner_is_calling(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let (status, body) = app
        .submit_raw("[PATCH] fs: nobody runs me", serde_json::json!({}))
        .await;
    assert!(status.is_success(), "{body}");
    let id = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_i64()
        .unwrap();
    let url = format!("/api/v1/comparisons/{id}");
    let waiting = app.get_json(&url).await["waiting"].clone();
    assert!(
        waiting.as_str().is_some_and(
            |w| w.starts_with("no runner has called the server in the last 10 minutes")
        ),
        "{waiting}"
    );
    app.register("lab").await;
    assert!(app.get_json(&url).await["waiting"].is_null());
}
