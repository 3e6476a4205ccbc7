//! δ follows what the machine's A/A comparison measured, down as well as
//! up, and only while that A/A speaks for the machine: not older than the
//! configured age, not measured before the host changed.

use patchperf_common::run::Side;

use crate::helpers::TestApp;

/// Ops of a patch that changes dup1 by `change` (0.003 = +0.3%) with
/// 0.01% boot-to-boot noise, as `tcg-icount` measures.
fn quiet(change: f64) -> impl Fn(Side, u32, u32) -> f64 + Copy {
    move |side, seq, _| {
        let base = 100_000.0 * (1.0 + 0.0001 * f64::from(seq % 2));
        match side {
            Side::Base => base,
            Side::Patched => base * (1.0 + change),
        }
    }
}

/// Submits the +0.3% patch on machine `lab`; returns its id.
async fn submit_tiny_win(app: &TestApp) -> i64 {
    app.submit("[PATCH] fs: a tiny dup win", "lab", &[1], 3)
        .await
}

/// Submits the +0.3% patch and runs everything `lab` can claim; returns
/// the patch's comparison and its verdict, δ and δ's source.
async fn tiny_win(
    app: &TestApp,
    lab: i64,
) -> (i64, (String, serde_json::Value, serde_json::Value)) {
    let id = submit_tiny_win(app).await;
    app.run_all(lab, quiet(0.003)).await;
    (id, judged(app, id).await)
}

/// The overall verdict and δ of comparison `id`'s one report.
async fn judged(app: &TestApp, id: i64) -> (String, serde_json::Value, serde_json::Value) {
    let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    let report = &view["verdict"]["reports"][0];
    (
        view["verdict"]["overall"].as_str().unwrap().to_string(),
        report["policy"]["calibrated_percent"].clone(),
        report["header"]["delta_source"].clone(),
    )
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_quiet_machines_aa_lowers_delta_until_it_is_too_old_or_the_host_changed(
    pool: sqlx::PgPool,
) {
    let app = TestApp::new(pool.clone()).await;
    let lab = app.register("lab").await;

    // Uncalibrated, a +0.3% change is under tcg-icount's 0.5% default.
    let (_, (verdict, calibrated, source)) = tiny_win(&app, lab).await;
    assert_eq!(verdict, "no change", "{source}");
    assert!(calibrated.is_null());
    assert!(
        source.as_str().unwrap().starts_with(
            "δ 0.50%: tcg-icount's default, no A/A comparison of dup1 · process · 1 task"
        ),
        "{source}"
    );

    // An A/A finds ±0.01%-ish noise: δ drops to the 0.1% floor and the
    // same change is an improvement.
    let aa = app.submit_aa("lab", 3).await;
    app.run_all(lab, quiet(0.0)).await;
    // It measures the noise; it is not judged against an earlier one.
    let (_, _, own) = judged(&app, aa).await;
    assert!(
        own.as_str()
            .unwrap()
            .starts_with("δ 0.5%: the mode's default, as for every A/A comparison"),
        "{own}"
    );
    let (after, (verdict, calibrated, source)) = tiny_win(&app, lab).await;
    assert_eq!(verdict, "improvement", "{source}");
    assert_eq!(calibrated, 0.1);
    let source = source.as_str().unwrap();
    assert!(
        source.starts_with(&format!(
            "δ 0.10%: tcg-icount's minimum δ; A/A comparison {aa} measured ±"
        )) && source.ends_with("and 2 × that is below it"),
        "{source}"
    );
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{after}/report.txt"))
        .await;
    assert!(text.contains(source), "{text}");
    assert!(
        text.contains(
            "code layout: function alignment not forced (instruction counts barely depend on it)"
        ),
        "{text}"
    );

    // Measured before the host's kernel changed, it speaks no more.
    sqlx::query(
        "UPDATE comparisons SET machine_inventory =
             jsonb_set(machine_inventory, '{kernel_release}', '\"5.10.0-old\"')
         WHERE id = $1",
    )
    .bind(aa)
    .execute(&pool)
    .await
    .unwrap();
    let (changed, (verdict, calibrated, _)) = tiny_win(&app, lab).await;
    assert_eq!(
        (verdict.as_str(), calibrated.is_null()),
        ("no change", true)
    );

    // Nor does one older than the configured 30 days.
    sqlx::query(
        "UPDATE comparisons SET machine_inventory = c.machine_inventory,
                finished_at = now() - interval '31 days'
         FROM comparisons c WHERE comparisons.id = $1 AND c.id = $2",
    )
    .bind(aa)
    .bind(changed)
    .execute(&pool)
    .await
    .unwrap();
    let (_, (verdict, calibrated, source)) = tiny_win(&app, lab).await;
    assert_eq!(
        (verdict.as_str(), calibrated.is_null()),
        ("no change", true)
    );
    assert!(
        source.as_str().unwrap().contains("within 30 days"),
        "{source}"
    );
}

/// Runs every job `machine` can claim: A/A jobs with the machine's quiet
/// noise, A/B jobs with a +0.3% change; returns the comparison of each
/// job claimed, in order.
async fn run_claimed(app: &TestApp, machine: i64) -> Vec<(i64, bool)> {
    let mut claimed = Vec::new();
    while let Some(spec) = app.claim(machine).await {
        let ops = quiet(if spec.aa { 0.0 } else { 0.003 });
        app.run_job(machine, &spec, &[1], ops, true).await;
        claimed.push((spec.comparison_id, spec.aa));
    }
    claimed
}

/// (calibrates, priority) of comparison `id`.
async fn calibration_of(pool: &sqlx::PgPool, id: i64) -> (Option<i64>, i16) {
    sqlx::query_as("SELECT calibrates, priority FROM comparisons WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_machine_is_calibrated_before_its_first_ab_of_a_kind_and_again_behind_its_work_when_that_aa_grows_old(
    pool: sqlx::PgPool,
) {
    let config = patchperf_server::Config {
        auto_calibrate: true,
        ..patchperf_server::Config::default()
    };
    let app = TestApp::with_config(pool.clone(), config).await;
    let lab = app.register("lab").await;

    // The first A/B of dup1 on the machine: its A/A runs first.
    let first = submit_tiny_win(&app).await;
    let claimed = run_claimed(&app, lab).await;
    let (aa, is_aa) = claimed[0];
    assert!(is_aa && aa != first, "{claimed:?}");
    assert_eq!(calibration_of(&pool, aa).await, (Some(first), 1));
    // All of the A/A's jobs, then the A/B's.
    let split = claimed.iter().position(|c| !c.1).unwrap();
    assert!(
        claimed[..split].iter().all(|&c| c == (aa, true)),
        "{claimed:?}"
    );
    assert!(
        claimed[split..].iter().all(|&c| c == (first, false)),
        "{claimed:?}"
    );
    app.build_reports().await;
    let (verdict, calibrated, source) = judged(&app, first).await;
    assert_eq!((verdict.as_str(), calibrated), ("improvement", 0.1.into()));
    assert!(
        source
            .as_str()
            .unwrap()
            .contains(&format!("A/A comparison {aa} measured")),
        "{source}"
    );

    // The next one of the same kind needs none.
    let second = submit_tiny_win(&app).await;
    let claimed = run_claimed(&app, lab).await;
    assert!(
        claimed.iter().all(|&(id, aa)| id == second && !aa),
        "{claimed:?}"
    );

    // Once that A/A is too old, an A/B runs first with the default δ and a
    // new A/A comes behind it; when that finishes the A/B is judged again.
    sqlx::query("UPDATE comparisons SET finished_at = now() - interval '31 days' WHERE id = $1")
        .bind(aa)
        .execute(&pool)
        .await
        .unwrap();
    let third = submit_tiny_win(&app).await;
    let claimed = run_claimed(&app, lab).await;
    let (again, _) = *claimed.last().unwrap();
    let split = claimed.iter().position(|c| c.1).unwrap();
    assert!(
        claimed[..split].iter().all(|&c| c == (third, false)),
        "{claimed:?}"
    );
    assert!(
        claimed[split..].iter().all(|&c| c == (again, true)),
        "{claimed:?}"
    );
    assert_eq!(calibration_of(&pool, again).await, (Some(third), -1));
    app.build_reports().await;
    let view = app.get_json(&format!("/api/v1/comparisons/{third}")).await;
    assert_eq!(view["verdict"]["reports"][0]["header"]["delta_aa"], again);
    assert_eq!(view["verdict"]["overall"], "improvement");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_failed_calibration_is_not_queued_again_and_its_comparison_runs(pool: sqlx::PgPool) {
    let config = patchperf_server::Config {
        auto_calibrate: true,
        max_attempts: 1,
        ..patchperf_server::Config::default()
    };
    let app = TestApp::with_config(pool.clone(), config).await;
    let lab = app.register("lab").await;
    let ab = submit_tiny_win(&app).await;
    let first = app.claim(lab).await.unwrap();
    assert!(first.aa);
    let failed = app
        .job_call(
            lab,
            &first,
            "finish",
            serde_json::json!({"outcome": "failed", "reason": "boot-failed", "detail": "no init"}),
        )
        .await;
    assert!(failed.status.is_success(), "{failed:?}");
    // The A/A's other jobs and the A/B's run, and no second A/A comes.
    let claimed = run_claimed(&app, lab).await;
    let aa = first.comparison_id;
    assert!(
        claimed.iter().all(|&c| c == (aa, true) || c == (ab, false)),
        "{claimed:?}"
    );
    assert_eq!(claimed.iter().filter(|c| c.0 == ab).count(), 3);
    let (aas,): (i64,) = sqlx::query_as("SELECT count(*) FROM comparisons WHERE kind = 'aa'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(aas, 1);
    let view = app.get_json(&format!("/api/v1/comparisons/{ab}")).await;
    assert_eq!(view["status"], "done");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_comparison_free_to_run_anywhere_runs_on_the_machine_calibrated_for_it(
    pool: sqlx::PgPool,
) {
    let config = patchperf_server::Config {
        auto_calibrate: true,
        ..patchperf_server::Config::default()
    };
    let app = TestApp::with_config(pool.clone(), config).await;
    let lab = app.register("lab").await;
    let other = app.register("other").await;
    let (status, body) = app
        .submit_raw(
            "[PATCH] fs: a tiny dup win",
            serde_json::json!({ "backend": "tcg-icount" }),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let ab = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_i64()
        .unwrap();

    // `lab` asks first and is handed the A/A it needs; the A/B is now
    // `lab`'s, so `other` does not run it uncalibrated meanwhile.
    let first = app.claim(lab).await.unwrap();
    assert!(first.aa && first.comparison_id != ab, "{first:?}");
    assert!(app.claim(other).await.is_none());
    let (machine,): (Option<i64>,) =
        sqlx::query_as("SELECT machine_id FROM comparisons WHERE id = $1")
            .bind(ab)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(machine, Some(lab));

    app.run_job(lab, &first, &[1], quiet(0.0), true).await;
    let claimed = run_claimed(&app, lab).await;
    assert_eq!(
        claimed.iter().filter(|c| c.0 == ab).count(),
        3,
        "{claimed:?}"
    );
    app.build_reports().await;
    let (verdict, calibrated, _) = judged(&app, ab).await;
    assert_eq!((verdict.as_str(), calibrated), ("improvement", 0.1.into()));
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_machine_holding_several_jobs_runs_no_ab_beside_its_first_calibration(
    pool: sqlx::PgPool,
) {
    let config = patchperf_server::Config {
        auto_calibrate: true,
        ..patchperf_server::Config::default()
    };
    let app = TestApp::with_config(pool, config).await;
    let lab = app.register("lab").await;
    let first = submit_tiny_win(&app).await;
    let aa = app.claim(lab).await.expect("the A/A's first job");
    assert!(aa.aa && aa.comparison_id != first);
    // An agent with --parallel 2 claims again while the A/A runs: the A/B
    // waits for the A/A, whose next job waits for its first.
    assert!(
        app.claim(lab).await.is_none(),
        "nothing beside the calibration"
    );
    app.run_job(lab, &aa, &[1], quiet(0.0), true).await;
    let claimed = run_claimed(&app, lab).await;
    let split = claimed.iter().position(|c| !c.1).unwrap();
    assert!(
        claimed[..split]
            .iter()
            .all(|&c| c == (aa.comparison_id, true))
            && claimed[split..].iter().all(|&c| c == (first, false)),
        "{claimed:?}"
    );
}
