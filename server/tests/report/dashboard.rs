//! What reading costs: the dashboard builds no report (a running
//! comparison shows its progress, a finished one its stored verdict), and
//! a report page builds its report once per new run, never serving one
//! from before the run.

use axum::http::StatusCode;

use crate::helpers::{TestApp, faster, squash};

/// Reports built by the app so far.
fn builds(app: &TestApp) -> u64 {
    app.state.telemetry.report_builds()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_dashboard_shows_progress_and_stored_verdicts_and_builds_no_report(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    // One finished comparison, then eight running ones with runs stored,
    // each on its own machine (a machine holds one job at a time).
    let lab = app.register("lab").await;
    let done = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    while let Some(spec) = app.claim(lab).await {
        app.run_job(lab, &spec, &[1], faster, true).await;
    }
    let mut running = Vec::new();
    for i in 0..8 {
        let name = format!("lab{i}");
        let machine = app.register(&name).await;
        let id = app
            .submit(&format!("[PATCH] mm: change {i}"), &name, &[1, 2], 3)
            .await;
        let spec = app.claim(machine).await.expect("a job to claim");
        app.run_job(machine, &spec, &[1, 2], faster, false).await;
        running.push(id);
    }

    // The builder built each report once as its runs arrived, and the
    // finished one's verdict with it; with nothing changed since, a second
    // pass takes nothing.
    let before = builds(&app);
    assert_eq!(app.build_reports().await, 9);
    assert_eq!(builds(&app) - before, 9, "one build per comparison");
    assert_eq!(app.build_reports().await, 0, "nothing changed");
    // The dashboard reads stored state only.
    let before = builds(&app);
    let (status, page) = app.get("/").await;
    assert_eq!(status, StatusCode::OK);
    let text = squash(&crate::browser::visible_text(&page));
    assert!(text.contains("done 3 a side"), "{text}");
    // Its most important report in columns, every report's sentence on
    // pointing at it.
    assert!(
        text.contains("improvement dup1 · nr_task 1 +5.1% +5.10% … +5.10% [PATCH] fs: a dup win"),
        "{text}"
    );
    assert!(
        page.contains(
            "title=\"dup1 nr_task 1: +5.1% improvement of will-it-scale.per_process_ops, 95% CI +"
        ),
        "{page}"
    );
    for _ in 0..3 {
        let (status, again) = app.get("/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again, page);
    }
    assert_eq!(builds(&app) - before, 0, "the dashboard built a report");

    // A running comparison: its status and its boots so far, no verdict.
    for id in &running {
        let row = page
            .split("<tr class=")
            .find(|r| r.contains(&format!("href=\"/comparisons/{id}\"")))
            .unwrap_or_else(|| panic!("comparison {id} is listed: {page}"));
        let row = squash(&crate::browser::visible_text(row));
        assert!(
            row.contains("running 2/6 boots, 4 runs, now claimed"),
            "{row}"
        );
        assert!(!row.contains("improvement"), "{row}");
    }
    // The finished one ranks with its verdict, the running among the
    // undecided: improvements come after them.
    let at = |id: i64| page.find(&format!("href=\"/comparisons/{id}\"")).unwrap();
    assert!(running.iter().all(|&id| at(id) < at(done)));
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_kept_report_is_rebuilt_when_a_run_arrives(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    let first = app.claim(lab).await.unwrap();
    app.run_job(lab, &first, &[1], faster, true).await;

    let before = builds(&app);
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(builds(&app) - before, 1);
    // The page, the text and the JSON again all render the kept report.
    for uri in [
        format!("/comparisons/{id}"),
        format!("/api/v1/comparisons/{id}/report.txt"),
        format!("/api/v1/comparisons/{id}"),
    ] {
        let (status, _) = app.get(&uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
    }
    assert_eq!(builds(&app) - before, 1, "a report was built twice");
    assert_eq!(
        app.get_json(&format!("/api/v1/comparisons/{id}")).await,
        json
    );

    // One more run: the next request sees it.
    let runs = |j: &serde_json::Value| {
        let report = &j["verdict"]["reports"][0];
        let n = |side: &str| report[side].as_u64().unwrap_or_else(|| panic!("{j:#}"));
        n("base_runs") + n("patched_runs")
    };
    let second = app.claim(lab).await.unwrap();
    let boot = second.boots[0];
    let ops = faster(boot.side, boot.seq, 1);
    app.upload(lab, &second, boot, crate::helpers::run_result(1, ops))
        .await;
    let after = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(builds(&app) - before, 2);
    assert_ne!(after, json);
    assert_eq!(runs(&after), runs(&json) + 1, "{after:#}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_comparison_whose_report_fails_leaves_the_listings_up(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let lab = app.register("lab").await;
    let broken = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    while let Some(spec) = app.claim(lab).await {
        app.run_job(lab, &spec, &[1], faster, true).await;
    }
    // A stored run its report cannot read back (as a value the door let
    // through once could be): its report fails to build.
    sqlx::query("UPDATE runs SET measurement = 'no-such-mode' WHERE comparison_id = $1")
        .bind(broken)
        .execute(&pool)
        .await
        .unwrap();
    let (status, _) = app.get(&format!("/api/v1/comparisons/{broken}")).await;
    assert!(status.is_server_error(), "{status}");
    // The builder logs it, goes on and tries again later (not at once);
    // the listings show it without a verdict instead of failing whole.
    assert_eq!(app.build_reports().await, 1, "taken, failed, left");
    assert_eq!(app.get_json("/healthz").await["reports_to_build"], 1);
    let (status, page) = app.get("/").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let text = squash(&crate::browser::visible_text(&page));
    assert!(
        text.contains("done 6/6 boots, 6 runs [PATCH] fs: a dup win"),
        "{text}"
    );
    let list = app.get_json("/api/v1/comparisons").await;
    assert_eq!(list["comparisons"][0]["id"], broken);
    assert!(list["comparisons"][0]["verdict"].is_null(), "{list:#}");

    // Mended (as a failure that was only passing would be), the retry
    // when it is due stores the verdict.
    sqlx::query("UPDATE runs SET measurement = 'tcg-icount' WHERE comparison_id = $1")
        .bind(broken)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE stale_reports SET due_at = now()")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(app.build_reports().await, 1);
    let list = app.get_json("/api/v1/comparisons").await;
    assert_eq!(list["comparisons"][0]["verdict"], "improvement", "{list:#}");
}

/// The ids of the comparisons a dashboard page lists, in order.
fn listed(page: &str) -> Vec<i64> {
    let table = page
        .split("<table class=\"comparisons\">")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap_or("");
    // A row links its id and its subject.
    let mut ids: Vec<i64> = table
        .split("<td><a href=\"/comparisons/")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().parse().unwrap())
        .collect();
    ids.dedup();
    ids
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_dashboard_pages_its_comparisons_and_keeps_the_filters(pool: sqlx::PgPool) {
    let app = TestApp::new(pool.clone()).await;
    app.register("lab").await;
    let mut ids = Vec::new();
    for i in 0..35 {
        ids.push(
            app.submit(&format!("[PATCH] fs: change {i}"), "lab", &[1], 3)
                .await,
        );
    }
    ids.reverse();
    let (status, first) = app.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed(&first), ids[..30], "the newest 30, newest first");
    assert!(first.contains("href=\"/?page=2\""), "{first}");
    let (status, second) = app.get("/?page=2").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed(&second), ids[30..]);
    assert!(
        second.contains("<a class=\"newer\" href=\"/\">"),
        "{second}"
    );
    assert!(
        !second.contains("class=\"older\" href=\"/?"),
        "the last page"
    );
    let (_, third) = app.get("/?page=3").await;
    assert!(listed(&third).is_empty());
    assert!(
        squash(&crate::browser::visible_text(&third)).contains("No comparisons match on page 3.")
    );

    // Filters stay on the links between pages.
    let (_, filtered) = app.get("/?status=queued&workload=dup1").await;
    assert_eq!(listed(&filtered), ids[..30]);
    assert!(
        filtered.contains("href=\"/?workload=dup1&#38;status=queued&#38;page=2\""),
        "{filtered}"
    );
    for bad in ["/?page=0", "/?page=1001", "/?page=two"] {
        let (status, page) = app.get(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {page}");
    }
    let (_, page) = app.get("/?page=0").await;
    assert!(
        page.contains("pages of comparisons are 1 to 1000"),
        "{page}"
    );

    // And a browser follows the same pages.
    if let Some(chromium) = crate::browser::Chromium::find() {
        let config = patchperf_server::Config::default();
        let server = patchperf_testkit::TestServer::serve(
            patchperf_server::AppState::new(pool, config),
            "127.0.0.1:0".parse().unwrap(),
        )
        .await;
        let dom = chromium
            .dump_dom(&format!("{}/?page=2", server.url()))
            .await;
        assert_eq!(listed(&dom), ids[30..], "{dom}");
        server.stop().await;
    }
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn comparisons_are_found_by_subject_author_or_message_id(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    app.register("lab").await;
    let close = app
        .submit("[PATCH] fs: skip task_work on close", "lab", &[1], 3)
        .await;
    let percent = app.submit("[PATCH] mm: 100%_faster", "lab", &[1], 3).await;
    let (status, body) = app
        .submit_raw(
            "unused",
            serde_json::json!({ "mbox": patchperf_testkit::mbox::TWO_PATCHES }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let series: i64 = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_i64()
        .unwrap();
    for (q, expected) in [
        ("TASK_WORK", vec![close]),
        ("task_work on", vec![close]),
        // LIKE's wildcards are matched as themselves.
        ("%", vec![percent]),
        ("100%_", vec![percent]),
        ("_", vec![close, percent]),
        ("hacker@example.org", vec![series]),
        ("<20240101000000.2-hacker@example.org>", vec![series]),
        ("20240101000000.1-hacker@example.org", vec![series]),
        ("kh@example.org", vec![percent, close]),
        ("nothing like it", vec![]),
    ] {
        let mut expected = expected;
        expected.sort_unstable_by(|a, b| b.cmp(a));
        let (status, page) = app.get(&format!("/?q={}", urlencoding(q))).await;
        assert_eq!(status, StatusCode::OK, "{q}: {page}");
        assert_eq!(listed(&page), expected, "{q}");
        let (_, json) = app
            .get(&format!("/api/v1/comparisons?q={}", urlencoding(q)))
            .await;
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let ids: Vec<i64> = json["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, expected, "API, {q}");
    }
    // The term stays in the box and on the links between pages.
    let (_, page) = app.get("/?q=task_work").await;
    assert!(page.contains("name=\"q\" value=\"task_work\""), "{page}");
    for bad in ["x".repeat(201), "a%00b".to_string()] {
        let (status, page) = app.get(&format!("/?q={bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
        let (status, _) = app.get(&format!("/api/v1/comparisons?q={bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
}

/// `s` percent-encoded for a query string.
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The dashboard's row of comparison `id`, as a browser shows it.
fn row_of(page: &str, id: i64) -> String {
    let row = page
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{id}\"")))
        .unwrap_or_else(|| panic!("comparison {id} is listed: {page}"));
    squash(&crate::browser::visible_text(row))
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn an_aa_comparison_is_listed_and_shown_as_a_calibration(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab-1").await;
    let aa = app.submit_aa("lab-1", 3).await;
    let name = "A/A calibration of dup1 on lab-1 (tcg-icount)";
    // Running: named, and no verdict said of it.
    let spec = app.claim(lab).await.unwrap();
    app.run_job(lab, &spec, &[1], faster, true).await;
    app.build_reports().await;
    let (_, page) = app.get("/").await;
    let row = row_of(&page, aa);
    assert!(row.contains(name), "{row}");
    assert!(
        !row.contains("(no subject)") && !row.contains("undecided"),
        "{row}"
    );
    let (_, page) = app.get(&format!("/comparisons/{aa}")).await;
    let text = squash(&crate::browser::visible_text(&page));
    assert!(text.contains("calibration: running"), "{text}");
    assert!(!text.contains("verdict: undecided"), "{text}");
    assert!(
        text.contains(&format!("{name}: linux-source-6.1 against itself")),
        "{text}"
    );

    // Done: still a calibration, not a verdict.
    app.run_all(lab, faster).await;
    app.build_reports().await;
    let (_, page) = app.get("/").await;
    let row = row_of(&page, aa);
    assert!(row.contains(&format!("> {aa} calibration ")), "{row}");
    assert!(row.contains(name), "{row}");
    let list = app.get_json("/api/v1/comparisons").await;
    assert_eq!(list["comparisons"][0]["name"], name, "{list:#}");
    assert_eq!(list["comparisons"][0]["kind"], "aa", "{list:#}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_failed_comparison_says_why_in_the_listing(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    let spec = app.claim(lab).await.unwrap();
    let finish = serde_json::json!({
        "outcome": "failed",
        "reason": "build-failed",
        "detail": "fs/file.c:12:5: error: 'fd' undeclared\nmake: *** [fs] Error 2",
    });
    let a = app.job_call(lab, &spec, "finish", finish).await;
    assert!(a.status.is_success(), "{a:?}");
    app.build_reports().await;
    let list = app.get_json("/api/v1/comparisons").await;
    let said = "build failed: fs/file.c:12:5: error: 'fd' undeclared";
    assert_eq!(list["comparisons"][0]["failure"], said, "{list:#}");
    let (_, page) = app.get("/").await;
    let row = row_of(&page, id);
    assert!(row.contains(&format!("{id} failed {said}")), "{row}");
    assert!(!row.contains("no results"), "{row}");
}
