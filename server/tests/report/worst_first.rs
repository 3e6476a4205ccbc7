//! Worst first where a person scans a comparison (issue 41, item 6): the
//! report page's per-report tables, the all-metrics page's (and its CSV)
//! and the profile page put the regressing nr_task first, and the metrics sorted by verdict go by severity
//! (regression, then undecided or real but below δ, then no change, then
//! improvement), the larger change first within each.

use axum::http::StatusCode;
use patchperf_common::run::{MetricValue, RunResult, Side};
use patchperf_testkit::TestServer;

use crate::browser::Chromium;
use crate::helpers::{TestApp, faster, run_result};

/// A dup1 run with a perf profile: `alloc_fd` takes 10% of the samples,
/// 14% with the patch where it regresses.
fn profiled(nr_task: u32, ops: f64, regressing: bool) -> RunResult {
    let alloc = if regressing { 14.0 } else { 10.0 };
    let mut run = run_result(nr_task, ops);
    for (name, value) in [
        ("perf-profile.children.cycles-pp.alloc_fd", alloc),
        ("perf-profile.self.cycles-pp.alloc_fd", alloc - 2.0),
    ] {
        run.metrics.push(MetricValue {
            name: name.into(),
            value,
        });
    }
    run
}

/// A comparison of three reports, in submission order an improvement
/// (+5% at nr_task 1), no change (nr_task 2) and a regression (−10% at
/// nr_task 4), as deterministic as tcg-icount, with profiles.
async fn three_reports(app: &TestApp) -> i64 {
    let lab = app.register("lab").await;
    let id = app
        .submit(
            "[PATCH] fs: faster alone, slower crowded",
            "lab",
            &[1, 2, 4],
            3,
        )
        .await;
    while let Some(spec) = app.claim(lab).await {
        for boot in &spec.boots {
            for nr_task in [1, 2, 4] {
                let patched = boot.side == Side::Patched;
                let ops = match (patched, nr_task) {
                    (true, 1) => 105_000.0,
                    (true, 4) => 90_000.0,
                    _ => 100_000.0,
                };
                let run = profiled(nr_task, ops, patched && nr_task == 4);
                app.upload(lab, &spec, *boot, run).await;
            }
        }
        app.finish_done(lab, &spec).await;
    }
    app.build_reports().await;
    id
}

/// The titles of the sections of class `class` on a page, in order.
fn sections(page: &str, class: &str) -> Vec<String> {
    page.split(&format!("<section class=\"{class}\">"))
        .skip(1)
        .map(|s| {
            let h2 = s.split("<h2>").nth(1).expect("a title");
            h2.split("</h2>").next().unwrap().to_string()
        })
        .collect()
}

const WORST_FIRST: [&str; 3] = [
    "dup1 · process · nr_task 4",
    "dup1 · process · nr_task 2",
    "dup1 · process · nr_task 1",
];

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_report_tables_put_the_regressing_nr_task_first(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let id = three_reports(&app).await;
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    let verdicts: Vec<&str> = json["verdict"]["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let headline = r["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == "will-it-scale.per_process_ops")
                .unwrap();
            headline["verdict"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        verdicts,
        ["improvement", "no-change", "regression"],
        "the reports in submission order"
    );

    // The report page's tables and the all-metrics page's.
    let pages = [
        format!("/comparisons/{id}"),
        format!("/comparisons/{id}/metrics"),
    ];
    for uri in &pages {
        let (status, page) = app.get(uri).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(sections(&page, "group"), WORST_FIRST, "{uri}: {page}");
    }
    // The CSV's rows in the same order.
    let (_, csv) = app.get(&format!("/comparisons/{id}/metrics.csv")).await;
    let mut tasks: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    tasks.dedup();
    assert_eq!(tasks, ["4", "2", "1"], "{csv}");
    if let Some(chromium) = Chromium::find() {
        let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
        for uri in &pages {
            let dom = chromium.dump_dom(&format!("{}{uri}", server.url())).await;
            assert_eq!(sections(&dom, "group"), WORST_FIRST, "{uri}: {dom}");
        }
        server.stop().await;
    }
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_profile_page_puts_the_regressing_nr_task_first(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let id = three_reports(&app).await;
    let (status, page) = app.get(&format!("/comparisons/{id}/profile")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sections(&page, "group profile"), WORST_FIRST, "{page}");
    if let Some(chromium) = Chromium::find() {
        let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
        let dom = chromium
            .dump_dom(&format!("{}/comparisons/{id}/profile", server.url()))
            .await;
        assert_eq!(sections(&dom, "group profile"), WORST_FIRST, "{dom}");
        server.stop().await;
    }
}

/// The metric names of a metrics page's tables, in order.
fn rows(page: &str) -> Vec<String> {
    page.split("<td class=\"metric\">")
        .skip(1)
        .map(|r| r.split('<').next().unwrap().to_string())
        .collect()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn metrics_sorted_by_verdict_go_by_severity_then_size(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    while let Some(spec) = app.claim(lab).await {
        for boot in &spec.boots {
            // dup1 5% faster (an improvement of ops and path-length), its
            // cycles per instruction 20% up (a regression), its context
            // switches flat (no change).
            let mut run = run_result(1, faster(boot.side, boot.seq, 1));
            let noise = 0.001 * f64::from(boot.seq % 3);
            let cpi = match boot.side {
                Side::Base => 1.0,
                Side::Patched => 1.2,
            } + noise;
            for (name, value) in [
                ("perf-stat.i.cpi", cpi),
                ("perf-stat.ps.context-switches", 1000.0 + noise),
            ] {
                run.metrics.push(MetricValue {
                    name: name.into(),
                    value,
                });
            }
            app.upload(lab, &spec, *boot, run).await;
        }
        app.finish_done(lab, &spec).await;
    }
    app.build_reports().await;
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    let metrics = json["verdict"]["reports"][0]["metrics"].as_array().unwrap();
    let verdict = |name: &str| {
        let m = metrics.iter().find(|m| m["name"] == name).unwrap();
        (
            m["verdict"].as_str().unwrap(),
            m["change"].as_f64().unwrap(),
        )
    };
    assert_eq!(verdict("perf-stat.i.cpi").0, "regression");
    assert_eq!(verdict("perf-stat.ps.context-switches").0, "no-change");
    let improvements: Vec<&str> = metrics
        .iter()
        .filter(|m| m["verdict"] == "improvement")
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(
        improvements.contains(&"perf-stat.overall.path-length"),
        "{improvements:?}"
    );
    // 1e9 ÷ ops falls by about 1 − 1/1.05 = 4.8%: the smallest improvement
    // (the others are +5%).
    let (_, path_length) = verdict("perf-stat.overall.path-length");
    assert!((-4.9..-4.7).contains(&path_length), "{path_length}");
    for name in &improvements {
        assert!(*name == "perf-stat.overall.path-length" || verdict(name).1 > 4.9);
    }

    let (status, page) = app
        .get(&format!("/comparisons/{id}/metrics?sort=verdict"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let shown = rows(&page);
    assert_eq!(shown.len(), metrics.len(), "{shown:?}");
    let at = |name: &str| shown.iter().position(|n| n == name).unwrap();
    assert_eq!(
        shown[0], "perf-stat.i.cpi",
        "the regression first: {shown:?}"
    );
    // perf stat could not count cycles in the guest: no change to rank, last.
    let cycles = metrics
        .iter()
        .find(|m| m["name"] == "perf-stat.ps.cycles")
        .unwrap();
    assert!(cycles["change"].is_null(), "{cycles}");
    assert_eq!(shown.last().unwrap(), "perf-stat.ps.cycles", "{shown:?}");
    let path_length = at("perf-stat.overall.path-length");
    for improvement in &improvements {
        assert!(
            at("perf-stat.ps.context-switches") < at(improvement),
            "no change before any improvement: {shown:?}"
        );
        assert!(
            at(improvement) <= path_length,
            "the smallest improvement last: {shown:?}"
        );
    }
    assert!(page.contains("<option value=\"verdict\" selected>worst first</option>"));
}
