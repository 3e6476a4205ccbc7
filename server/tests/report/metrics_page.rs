//! Every metric of a report on its own page, filtered and sorted by the
//! server, and as CSV with unrounded numbers; the perf profile of both
//! kernels, differentially, on its own page.

use axum::http::StatusCode;
use patchperf_common::run::{MetricValue, RunResult, Side};

use crate::helpers::{TestApp, faster, run_result, squash};

/// The metric names of a metrics page's tables, in order.
fn rows(page: &str) -> Vec<String> {
    page.split("<td class=\"metric\">")
        .skip(1)
        .map(|r| r.split('<').next().unwrap().to_string())
        .collect()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn all_metrics_are_filtered_sorted_and_downloaded(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    app.run_all(lab, faster).await;
    app.build_reports().await;
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    let metrics = json["verdict"]["reports"][0]["metrics"].as_array().unwrap();
    let names: Vec<&str> = metrics
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.len() >= 4, "{names:?}");

    let (status, page) = app.get(&format!("/comparisons/{id}/metrics")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(rows(&page), names, "every metric, in the report's order");
    let said = squash(&crate::browser::visible_text(&page));
    assert!(
        said.contains(&format!("{n} of {n} metrics", n = names.len())),
        "{said}"
    );

    let (_, page) = app
        .get(&format!("/comparisons/{id}/metrics?filter=PATH-length"))
        .await;
    assert_eq!(rows(&page), ["perf-stat.overall.path-length"]);
    assert!(page.contains("value=\"PATH-length\""));
    assert!(page.contains(&format!(
        "href=\"/comparisons/{id}/metrics.csv?filter=PATH-length\""
    )));

    // Largest change first, whichever way it goes; a metric without a
    // change last.
    let (_, page) = app
        .get(&format!("/comparisons/{id}/metrics?sort=change"))
        .await;
    let mut by_change: Vec<(Option<f64>, &str)> = metrics
        .iter()
        .map(|m| (m["change"].as_f64(), m["name"].as_str().unwrap()))
        .collect();
    by_change.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => y.abs().total_cmp(&x.abs()),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let shown = rows(&page);
    assert_eq!(shown[0], by_change[0].1, "{shown:?} {by_change:?}");
    let (_, page) = app
        .get(&format!("/comparisons/{id}/metrics?sort=name"))
        .await;
    let mut sorted: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    sorted.sort();
    assert_eq!(rows(&page), sorted);

    let (status, page) = app
        .get(&format!("/comparisons/{id}/metrics?sort=size"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("name, change, verdict, q"), "{page}");
    let (status, _) = app.get("/comparisons/999/metrics").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The CSV: a header, one line a metric, the numbers unrounded.
    let (status, csv) = app.get(&format!("/comparisons/{id}/metrics.csv")).await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,mode,nr_task,metric,unit,base_mean"));
    assert_eq!(lines.len(), names.len() + 1, "{csv}");
    let headline = lines
        .iter()
        .find(|l| l.contains(",will-it-scale.per_process_ops,"))
        .unwrap();
    let fields: Vec<&str> = headline.split(',').collect();
    assert_eq!(
        &fields[..5],
        [
            "dup1",
            "process",
            "1",
            "will-it-scale.per_process_ops",
            "ops/s per task"
        ]
    );
    let change: f64 = fields[9].parse().unwrap();
    let from_json = metrics
        .iter()
        .find(|m| m["name"] == "will-it-scale.per_process_ops")
        .unwrap()["change"]
        .as_f64()
        .unwrap();
    assert_eq!(change, from_json, "unrounded");
    assert_eq!(fields[10], "percent");
    assert_eq!(fields[15], "improvement");
    let (_, csv) = app
        .get(&format!("/comparisons/{id}/metrics.csv?filter=path-length"))
        .await;
    assert_eq!(csv.lines().count(), 2, "{csv}");
}

/// A dup1 run with a perf profile: `alloc_fd` takes `alloc` % of the
/// samples (less with the patch), `do_dup2` a steady 20%.
fn profiled_run(side: Side, seq: u32) -> RunResult {
    let noise = 0.01 * f64::from(seq % 3);
    let alloc = match side {
        Side::Base => 10.0,
        Side::Patched => 6.0,
    } + noise;
    let mut run = run_result(1, faster(side, seq, 1));
    for (name, value) in [
        ("perf-profile.children.cycles-pp.alloc_fd", alloc),
        ("perf-profile.self.cycles-pp.alloc_fd", alloc - 2.0),
        ("perf-profile.children.cycles-pp.do_dup2", 20.0 + noise),
        ("perf-profile.self.cycles-pp.do_dup2", 5.0 + noise),
        (
            "perf-profile.calltrace.cycles-pp.alloc_fd.__x64_sys_dup.do_syscall_64.entry_SYSCALL_64_after_hwframe.dup",
            alloc - 1.0,
        ),
        (
            "perf-profile.calltrace.cycles-pp.alloc_fd.ksys_dup3.__x64_sys_dup2",
            1.0 + noise,
        ),
    ] {
        run.metrics.push(MetricValue {
            name: name.into(),
            value,
        });
    }
    run
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_profile_page_shows_where_the_time_went(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    while let Some(spec) = app.claim(lab).await {
        for boot in &spec.boots {
            app.upload(lab, &spec, *boot, profiled_run(boot.side, boot.seq))
                .await;
        }
        app.finish_done(lab, &spec).await;
    }
    app.build_reports().await;
    let (_, page) = app.get(&format!("/comparisons/{id}")).await;
    assert!(
        page.contains(&format!("href=\"/comparisons/{id}/profile\"")),
        "{page}"
    );

    let (status, page) = app.get(&format!("/comparisons/{id}/profile")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let said = squash(&crate::browser::visible_text(&page));
    // alloc_fd moved 4 points, do_dup2 not at all: alloc_fd first.
    let alloc = said.find("alloc_fd").expect("alloc_fd listed");
    let dup2 = said.find("do_dup2").expect("do_dup2 listed");
    assert!(alloc < dup2, "{said}");
    assert!(said.contains("2 of 2 functions profiled"), "{said}");
    assert!(said.contains("10.01 6.01 -4.00 8.01 4.01 -4.00"), "{said}");
    // Its chains, the one that moved first, as callee ← caller.
    let chain = "alloc_fd ← __x64_sys_dup ← do_syscall_64 ← entry_SYSCALL_64_after_hwframe ← dup 9.01 5.01 -4.00";
    assert!(said.contains(chain), "{said}");
    assert!(
        said.find(chain) < said.find("alloc_fd ← ksys_dup3"),
        "{said}"
    );
    assert!(page.contains("<details open><summary>alloc_fd</summary>"));

    // Without a profile, the page says so and the report does not link it.
    let plain = app.submit("[PATCH] fs: no profile", "lab", &[1], 3).await;
    app.run_all(lab, faster).await;
    app.build_reports().await;
    let (_, page) = app.get(&format!("/comparisons/{plain}")).await;
    assert!(!page.contains("/profile\""));
    let (_, page) = app.get(&format!("/comparisons/{plain}/profile")).await;
    assert!(page.contains("This comparison has no profile"));
}
