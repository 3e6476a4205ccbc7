//! The step that moved the number, named in every first answer of a series
//! measured patch by patch: the page's first lines (linking the step's own
//! page), `report.txt`'s lines before `commit:`, the dashboard row and the
//! machine page's.

use patchperf_common::run::Side;

use patchperf_testkit::mbox::step_patch;

use crate::helpers::{TestApp, run_result};

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_first_answers_of_a_series_name_the_patch_that_moved_it(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .post_comparison(serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": (1..=3).map(|n| step_patch("culprit", n, 3)).collect::<String>(),
            "per_patch": true,
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3, "backend": "tcg-icount", "machine": "lab",
            "order_seed": 7,
        }))
        .await;
    let step2 =
        app.get_json(&format!("/api/v1/comparisons/{id}")).await["steps"][1]["comparison_id"]
            .as_i64()
            .unwrap();
    // Patch 2 makes dup1 10% slower; patches 1 and 3 change nothing.
    while let Some(spec) = app.claim(lab).await {
        for boot in &spec.boots {
            let kernel = match boot.side {
                Side::Base => &spec.base_mbox,
                Side::Patched => &spec.mbox,
            };
            let slower = kernel.contains("Subject: [PATCH 2/3]");
            let noise = [0.0, 0.004, -0.004, 0.002, -0.002][(boot.seq % 5) as usize];
            let ops = 100_000.0 * if slower { 0.9 } else { 1.0 } * (1.0 + noise);
            app.upload(lab, &spec, *boot, run_result(1, ops)).await;
        }
        app.finish_done(lab, &spec).await;
    }
    app.build_reports().await;
    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(view["verdict"]["overall"], "regression", "{view:#}");
    let named = "patch 2/3 “fs: step 2”";

    let (_, page) = app.get(&format!("/comparisons/{id}")).await;
    let summary = &page[page.find("class=\"summary\"").unwrap()..];
    let summary = &summary[..summary.find("</section>").unwrap()];
    assert!(
        summary.contains(&format!(
            "from {named}, <a href=\"/comparisons/{step2}\">measured on its own</a>"
        )),
        "{summary}"
    );

    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    let from = text.find(&format!("from: {named}\n")).expect(&text);
    assert!(from < text.find("commit:").unwrap(), "{text}");

    let (_, dashboard) = app.get("/").await;
    let row = dashboard
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{id}\"")))
        .unwrap();
    assert!(row.contains(&format!("from {named}")), "{row}");

    let (_, machine) = app.get("/machines/lab").await;
    let row = machine
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{id}\"")))
        .unwrap();
    assert!(row.contains(&format!("from {named}")), "{row}");
}
