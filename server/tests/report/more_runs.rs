//! More runs while undecided: a comparison submitted with `max_runs` whose
//! headline verdict is undecided when its jobs are done gets more boots,
//! doubling the runs a side, until it decides or reaches `max_runs`; the
//! added boots run only the workloads with an undecided cell.

use axum::http::StatusCode;
use patchperf_common::run::Side;

use patchperf_testkit::mbox::step_patch;

use crate::helpers::{TestApp, run_result};

/// ±3% of boot-to-boot noise that depends only on the boot's position.
fn noise(seq: u32) -> f64 {
    [0.0, 0.03, -0.03, 0.015, -0.015][(seq % 5) as usize]
}

/// The patched kernel `change` faster, under the noise above.
fn noisy(change: f64) -> impl Fn(Side, u32, u32) -> f64 + Copy {
    move |side, seq, _| {
        let base = 100_000.0 * (1.0 + noise(seq * 7 + 3));
        match side {
            Side::Base => base,
            Side::Patched => base * (1.0 + change),
        }
    }
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn an_undecided_comparison_gets_more_boots_until_it_decides(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .submit_growing("[PATCH] fs: a dup win in the noise", "lab", 3, 24)
        .await;
    let first_order = app.get_json(&format!("/api/v1/comparisons/{id}")).await["boot_order"]
        .as_str()
        .unwrap()
        .to_string();
    app.run_all(lab, noisy(0.04)).await;

    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["verdict"]["overall"], "improvement", "{view:#}");
    let runs = view["runs_per_side"].as_i64().unwrap();
    let added: Vec<i64> = view["runs_added_at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(!added.is_empty() && added[0] == 3, "{added:?}");
    assert!(runs > 3 && runs <= 24, "{runs}");
    assert_eq!(view["jobs"].as_array().unwrap().len() as i64, runs);
    assert_eq!(view["runs"]["base"].as_i64(), Some(runs));
    // The added boots continue the order the seed drew.
    let order = view["boot_order"].as_str().unwrap();
    assert_eq!(order.len() as i64, 2 * runs);
    assert!(
        order.starts_with(&first_order),
        "{first_order} then {order}"
    );

    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    let steps: Vec<String> = added.iter().chain([&runs]).map(i64::to_string).collect();
    // Each look spent its share of the 5% level: this one states its own.
    let line = format!(
        "runs: {runs} base, {runs} patched (boots interleaved; more added while undecided: {} \
         a side; look {} of at most ",
        steps.join(" → "),
        steps.len()
    );
    assert!(text.contains(&line), "{line}\n{text}");
    assert!(text.contains("intervals and q ≤ 0.0"), "{text}");

    // The first added job says why, in its log.
    let added_job = view["jobs"][3]["id"].as_i64().unwrap();
    let (status, log) = app.get(&format!("/jobs/{added_job}/log")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        log.contains("added: 3 runs a side left dup1 nr_task 1 +"),
        "{log}"
    );
    let (_, page) = app.get(&format!("/comparisons/{id}")).await;
    assert!(page.contains("more added while undecided: 3 → 6"), "{page}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn boots_stop_at_max_runs_when_nothing_decides(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .submit_growing("[PATCH] fs: nothing to see", "lab", 3, 8)
        .await;
    app.run_all(lab, noisy(0.0)).await;
    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["runs_per_side"], 8);
    assert_eq!(view["runs_added_at"], serde_json::json!([3, 6]));
    assert_eq!(view["jobs"].as_array().unwrap().len(), 8);
    assert_eq!(view["verdict"]["overall"], "undecided", "{view:#}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_decided_comparison_gets_no_more_boots(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .submit_growing("[PATCH] fs: a clear dup win", "lab", 3, 24)
        .await;
    app.run_all(lab, |side, seq, _| {
        let base = 100_000.0 * (1.0 + 0.001 * f64::from(seq % 2));
        if side == Side::Patched {
            base * 1.1
        } else {
            base
        }
    })
    .await;
    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["verdict"]["overall"], "improvement");
    assert_eq!(view["runs_per_side"], 3);
    assert_eq!(view["runs_added_at"], serde_json::json!([]));
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    // It could have taken more looks, so its first spent half the level.
    assert!(
        text.contains(
            "runs: 3 base, 3 patched (boots interleaved; look 1 of at most 4: 97.5% intervals \
             and q ≤ 0.025, the 5% level spent over the looks)\n"
        ),
        "{text}"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn max_runs_below_runs_is_refused(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    app.register("lab").await;
    let (status, body) = app
        .submit_raw(
            "[PATCH] fs: x",
            serde_json::json!({ "runs": 5, "max_runs": 4 }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body.contains("max_runs is 4; it must be from runs (5) to 100"),
        "{body}"
    );
    let list = app.get_json("/api/v1/comparisons").await;
    assert!(list["comparisons"].as_array().unwrap().is_empty());
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_comparison_naming_its_mode_may_grow_fourfold_unless_told_otherwise(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let max_runs = |extra: serde_json::Value| {
        let app = &app;
        async move {
            let (status, body) = app.submit_raw("[PATCH] fs: a dup win", extra).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            let id = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
                .as_i64()
                .unwrap();
            app.get_json(&format!("/api/v1/comparisons/{id}")).await["max_runs_per_side"].clone()
        }
    };
    assert_eq!(max_runs(serde_json::json!({"backend": "tcg"})).await, 12);
    assert_eq!(
        max_runs(serde_json::json!({"backend": "kvm", "max_runs": 3})).await,
        3
    );
    // tcg-icount too: a workload's boot-to-boot spread there is small but
    // not nil, and an interval straddling δ narrows with more boots.
    assert_eq!(
        max_runs(serde_json::json!({"backend": "tcg-icount"})).await,
        12
    );
    assert!(max_runs(serde_json::json!({})).await.is_null());
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn added_boots_run_only_the_undecided_workloads(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .post_comparison(serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": patchperf_testkit::mbox::one_patch("[PATCH] fs: a dup win, open in the noise"),
            "workloads": ["dup1", "open1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3, "max_runs": 6, "backend": "tcg-icount", "machine": "lab",
            "order_seed": 7,
        }))
        .await;
    let mut asked = Vec::new();
    while let Some(spec) = app.claim(lab).await {
        asked.push(spec.workloads.clone());
        for boot in &spec.boots {
            for w in &spec.workloads {
                // dup1 10% faster, all but still; open1 unchanged in ±3%.
                let ops = match w.as_str() {
                    "dup1" => noisy(0.1)(boot.side, boot.seq, 1) / (1.0 + noise(boot.seq * 7 + 3)),
                    _ => noisy(0.0)(boot.side, boot.seq, 1),
                };
                let mut run = run_result(1, ops);
                run.workload = w.clone();
                app.upload(lab, &spec, *boot, run).await;
            }
        }
        app.finish_done(lab, &spec).await;
    }
    let both = vec!["dup1".to_string(), "open1".to_string()];
    let open = vec!["open1".to_string()];
    assert_eq!(
        asked,
        [
            both.clone(),
            both.clone(),
            both.clone(),
            open.clone(),
            open.clone(),
            open
        ],
        "{asked:?}"
    );

    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done");
    assert_eq!(view["runs_added_at"], serde_json::json!([3]));
    assert_eq!(view["runs_per_side"], 6);
    // 3 boots a side of both workloads, then 3 of open1.
    assert_eq!(view["runs"]["expected_per_side"], 9, "{view:#}");
    assert_eq!(view["runs"]["base"], 9, "{view:#}");
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    // dup1 decided at its first look and kept its runs and verdict.
    assert!(text.contains("runs: 3 base, 3 patched"), "{text}");
    assert!(text.contains("runs: 6 base, 6 patched"), "{text}");
    let added_job = view["jobs"][3]["id"].as_i64().unwrap();
    let (_, log) = app.get(&format!("/jobs/{added_job}/log")).await;
    assert!(log.contains("measuring open1 at 6 a side"), "{log}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_series_taken_from_its_steps_boots_its_own_kernels_only_while_undecided(
    pool: sqlx::PgPool,
) {
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .post_comparison(serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": format!("{}{}", step_patch("two", 1, 2), step_patch("two", 2, 2)),
            "per_patch": true,
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3, "max_runs": 6, "backend": "tcg-icount", "machine": "lab",
            "order_seed": 7,
        }))
        .await;
    let steps: Vec<i64> = app.get_json(&format!("/api/v1/comparisons/{id}")).await["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["comparison_id"].as_i64().unwrap())
        .collect();
    // Patch 1 is 10% faster and patch 2 takes it back: each step decides
    // at its first look, the whole series stays in the ±3% noise.
    let speed = |patches: usize| [1.0, 1.1, 1.0][patches];
    let mut claimed = Vec::new();
    while let Some(spec) = app.claim(lab).await {
        claimed.push((
            spec.comparison_id,
            spec.base_mbox.is_empty(),
            spec.mbox.len(),
        ));
        for boot in &spec.boots {
            let kernel = match boot.side {
                Side::Base => &spec.base_mbox,
                Side::Patched => &spec.mbox,
            };
            let patches = kernel.matches("\nSubject: [PATCH ").count()
                + usize::from(kernel.starts_with("Subject: [PATCH "));
            let ops = 100_000.0 * speed(patches) * (1.0 + noise(boot.seq * 7 + 3));
            app.upload(lab, &spec, *boot, run_result(1, ops)).await;
        }
        app.finish_done(lab, &spec).await;
    }
    let whole_mbox = format!("{}{}", step_patch("two", 1, 2), step_patch("two", 2, 2)).len();
    let steps_first: Vec<i64> = claimed.iter().take(6).map(|c| c.0).collect();
    assert_eq!(
        steps_first,
        [steps[0], steps[0], steps[0], steps[1], steps[1], steps[1]],
        "{claimed:?}"
    );
    // Then, undecided on the steps' runs, the series boots the base and
    // the whole series itself, 3 more blocks.
    assert_eq!(
        claimed[6..],
        [
            (id, true, whole_mbox),
            (id, true, whole_mbox),
            (id, true, whole_mbox)
        ],
        "{claimed:?}"
    );
    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(view["runs_added_at"], serde_json::json!([3]));
    assert_eq!(view["runs"]["base"], 6, "{view:#}");
    assert_eq!(view["runs"]["expected_per_side"], 6, "{view:#}");
    for step in &steps {
        let s = app.get_json(&format!("/api/v1/comparisons/{step}")).await;
        assert_eq!(
            s["runs_per_side"], 3,
            "a decided step keeps its runs: {s:#}"
        );
    }
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert!(
        text.contains(
            "runs: 6 base, 6 patched (step 1's base boots and step 2's patched boots, each \
             interleaved within its step; more added while undecided: 3 → 6 a side"
        ),
        "{text}"
    );
}
