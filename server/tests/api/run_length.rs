//! A submission, tree or bisection that leaves out `seconds` and
//! `warmup_seconds` gets the measurement mode's run length: fixed at
//! submission when it names its mode or machine, else (a comparison) by the
//! first machine to claim it.

use patchperf_common::run::MeasurementMode;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::{TestApp, comparison_request, inventory};

/// open1 with the run length left to the mode, `extra` merged in.
fn leaving_the_length(extra: Value) -> Value {
    let mut req = comparison_request(3, extra);
    req["params"] = json!({ "nr_task": [1, 2] });
    req
}

async fn view(app: &TestApp, id: i64) -> Value {
    app.get(&format!("/api/v1/comparisons/{id}")).await.json
}

fn length(v: &Value) -> (u64, u64) {
    (
        v["params"]["seconds"].as_u64().unwrap(),
        v["params"]["warmup_seconds"].as_u64().unwrap(),
    )
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_first_machine_to_claim_fixes_a_length_left_to_its_mode(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app.post_comparison(leaving_the_length(json!({}))).await;
    let before = view(&app, id).await;
    assert_eq!(before["run_length_pending"], true, "{before}");
    assert_eq!(length(&before), (5, 2), "a wall-clock length meanwhile");
    let page = app.get(&format!("/comparisons/{id}")).await.body;
    assert!(
        page.contains("the run length of the mode the claiming machine measures in"),
        "{page}"
    );

    // The kit's machine measures in tcg-icount first.
    let lab = app.register("lab").await;
    let job = app.claim(lab).await.expect("a job");
    assert_eq!(job.comparison_id, id);
    assert_eq!((job.params.seconds, job.params.warmup_seconds), (1, 1));
    let after = view(&app, id).await;
    assert!(after.get("run_length_pending").is_none(), "{after}");
    assert_eq!(length(&after), (1, 1));
    let page = app.get(&format!("/comparisons/{id}")).await.body;
    assert!(page.contains("1 s measured after 1 s warm-up"), "{page}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_named_mode_or_machine_fixes_the_length_at_submission(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let mut metal = inventory("rack-1");
    metal.backends = vec![MeasurementMode::Kvm, MeasurementMode::TcgIcount];
    let rack = app.register_machine("rack-1", &app.runner, metal).await;
    app.register("lab").await;

    let on_lab = app
        .post_comparison(leaving_the_length(json!({ "machine": "lab" })))
        .await;
    let icount = app
        .post_comparison(leaving_the_length(json!({ "backend": "tcg-icount" })))
        .await;
    let on_rack = app
        .post_comparison(leaving_the_length(json!({ "machine": "rack-1" })))
        .await;
    for (id, want) in [(on_lab, (1, 1)), (icount, (1, 1)), (on_rack, (5, 2))] {
        let v = view(&app, id).await;
        assert!(v.get("run_length_pending").is_none(), "{v}");
        assert_eq!(length(&v), want, "comparison {id}");
    }

    // Given, a length stays whatever the mode; half given, the other half
    // is the mode's.
    let given = app.post_comparison(comparison_request(3, json!({}))).await;
    let mut half = leaving_the_length(json!({}));
    half["params"]["seconds"] = json!(3);
    let half = app.post_comparison(half).await;
    let mut seen = Vec::new();
    while let Some(job) = app.claim(rack).await {
        seen.push((
            job.comparison_id,
            job.params.seconds,
            job.params.warmup_seconds,
        ));
        app.upload_all(rack, &job).await;
    }
    assert!(seen.contains(&(given, 5, 1)), "{seen:?}");
    assert!(
        seen.contains(&(half, 3, 2)),
        "rack-1 measures in kvm: {seen:?}"
    );
    assert!(seen.contains(&(on_rack, 5, 2)), "{seen:?}");
}

/// A tracked tree's history and a bisection's probes each keep one run
/// length, so one left to the mode is fixed when they are added: the named
/// mode's, else the named machine's best, else a wall-clock mode's.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn trees_and_bisections_fix_a_length_left_to_the_mode_when_added(pool: PgPool) {
    let (repo, ids) = crate::git_repo::linear(3);
    let mirrors = tempfile::tempdir().unwrap();
    let app = crate::bisections::app(pool, mirrors.path()).await;
    let mut metal = inventory("rack-1");
    metal.backends = vec![MeasurementMode::Kvm, MeasurementMode::TcgIcount];
    app.register_machine("rack-1", &app.runner, metal).await;
    let lab = app.register("lab").await;
    let url = repo.path().to_str().unwrap();

    let mut trees = Vec::new();
    for (name, extra, want) in [
        ("on-lab", json!({ "machine": "lab" }), (1, 1)),
        ("on-rack", json!({ "machine": "rack-1" }), (5, 2)),
        (
            "rack-icount",
            json!({ "machine": "rack-1", "backend": "tcg-icount" }),
            (1, 1),
        ),
        ("anywhere", json!({}), (5, 2)),
        (
            "given",
            json!({ "params": { "nr_task": [1], "seconds": 3 } }),
            (3, 2),
        ),
    ] {
        let mut req = crate::trees::tree_request(url, name);
        req["params"] = json!({ "nr_task": [1] });
        for (k, v) in extra.as_object().unwrap() {
            req[k] = v.clone();
        }
        let tree = crate::trees::add(&app, req).await;
        assert_eq!(length(&tree), want, "tree {name}: {tree}");
        trees.push(tree);
    }

    let mut req = crate::bisections::request(url, &ids[0], "master");
    req["params"] = json!({ "nr_task": [1] });
    req["machine"] = json!("lab");
    crate::bisections::start(&app, req).await;
    let probe = app.claim(lab).await.expect("the first probe");
    assert_eq!(
        (probe.params.seconds, probe.params.warmup_seconds),
        (1, 1),
        "lab measures in tcg-icount"
    );
}

/// A bisection started from a comparison measures on that comparison's
/// machine, so a length left out is that machine's mode's.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_bisection_from_a_comparison_takes_the_length_of_its_machines_mode(pool: PgPool) {
    let (repo, ids) = crate::git_repo::linear(4);
    let mirrors = tempfile::tempdir().unwrap();
    let app = crate::bisections::app(pool, mirrors.path()).await;
    let lab = app.register("lab").await;
    let url = repo.path().to_str().unwrap();
    let range = crate::bisections::range_comparison(&app, url, &ids[0]).await;
    let played = crate::bisections::Lab {
        culprit: Some(3),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    played.drain(&app, lab).await;
    crate::bisections::start(
        &app,
        json!({ "comparison": range, "workload": "open1", "params": { "nr_task": [1] } }),
    )
    .await;
    let probe = app.claim(lab).await.expect("a probe");
    assert_ne!(probe.comparison_id, range);
    assert_eq!(
        (probe.params.seconds, probe.params.warmup_seconds),
        (1, 1),
        "lab, which ran the comparison, measures in tcg-icount"
    );
}
