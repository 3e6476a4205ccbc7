//! Per-patch comparisons: a 3-patch series submitted with `per_patch`
//! becomes the whole-series comparison and one step per patch; the runner
//! gets the steps in order (each base carrying the patches before), all on
//! one machine, and the whole series is their first base and last patched
//! runs; a patch that does not apply fails
//! the steps after it and the whole series, naming the patch, while the
//! steps before keep their reports.

use axum::http::StatusCode;
use patchperf_common::digest::sha256_hex;
use patchperf_common::mbox;
use patchperf_common::protocol::JobSpec;
use serde_json::{Value, json};
use sqlx::PgPool;

use patchperf_testkit::mbox::step_patch;

use crate::helpers::TestApp;

/// Patch `n`, touching its own file (a long series' patches all say
/// `n/3`: only the count matters there).
fn patch(n: u32) -> String {
    step_patch("step", n, 3)
}

fn three_patches() -> String {
    (1..=3).map(patch).collect()
}

async fn submit_per_patch(app: &TestApp) -> i64 {
    app.submit(
        3,
        json!({ "per_patch": true, "mbox": three_patches(), "order_seed": 7 }),
    )
    .await
}

/// The ids of the parent's steps, in order.
fn step_ids(parent: &Value) -> Vec<i64> {
    parent["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["comparison_id"].as_i64().unwrap())
        .collect()
}

/// Claims, uploads every run of and finishes one job.
async fn run_job(app: &TestApp, machine: i64) -> Option<JobSpec> {
    let job = app.claim(machine).await?;
    app.upload_all(machine, &job).await;
    app.finish_done(machine, &job).await;
    Some(job)
}

#[sqlx::test(migrations = "../migrations")]
async fn each_step_runs_in_order_on_one_machine_then_the_whole_series(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let m2 = app.register("m2").await;
    let parent_id = submit_per_patch(&app).await;
    let parent = app.comparison(parent_id).await;
    let steps = step_ids(&parent);
    assert_eq!(steps.len(), 3, "{parent}");
    for (k, s) in parent["steps"].as_array().unwrap().iter().enumerate() {
        assert_eq!(s["step"], k + 1);
        assert_eq!(
            s["subject"],
            format!("[PATCH {}/3] fs: step {}", k + 1, k + 1)
        );
        assert_eq!(s["status"], "queued");
    }
    // Only the whole-series comparison is listed; its steps hang off it.
    let list = app.get("/api/v1/comparisons").await;
    let listed: Vec<i64> = list.json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [parent_id]);

    let prefixes = mbox::prefixes(&three_patches());
    let first = run_job(&app, m1).await.unwrap();
    // The first claim pins the whole family to m1.
    assert!(app.claim(m2).await.is_none());
    // The dashboard counts the steps' boots for the whole series, which
    // has none of its own: 2 booted of 18 (3 steps × 3 jobs × 2 boots).
    let dashboard = app.get("/").await.body;
    let row = dashboard
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{parent_id}\"")))
        .unwrap();
    assert!(row.contains("2/18 boots, 4 runs"), "{row}");
    let mut specs = vec![first];
    while let Some(job) = run_job(&app, m1).await {
        specs.push(job);
    }
    let order: Vec<i64> = specs.iter().map(|j| j.comparison_id).collect();
    let expected: Vec<i64> = steps.iter().flat_map(|&id| [id; 3]).collect();
    assert_eq!(
        order, expected,
        "steps 1, 2, 3; the whole series boots nothing of its own"
    );
    for job in &specs {
        let k = steps.iter().position(|&s| s == job.comparison_id);
        match k {
            Some(k) => {
                assert_eq!(job.mbox, prefixes[k], "step {}", k + 1);
                let base = if k == 0 { "" } else { &prefixes[k - 1] };
                assert_eq!(job.base_mbox, base, "step {}", k + 1);
            }
            None => {
                assert_eq!(job.mbox, three_patches());
                assert_eq!(job.base_mbox, "");
            }
        }
        assert_eq!(job.patches_sha256, sha256_hex(job.mbox.as_bytes()));
        let base_sha = if job.base_mbox.is_empty() {
            String::new()
        } else {
            sha256_hex(job.base_mbox.as_bytes())
        };
        assert_eq!(job.base_patches_sha256, base_sha);
    }

    let parent = app.comparison(parent_id).await;
    assert_eq!(parent["status"], "done", "{parent}");
    // The whole series is step 1's base boots against step 3's patched
    // ones: the same runs, so the same numbers.
    let whole = &parent["verdict"]["reports"][0];
    let first = app.comparison(steps[0]).await;
    let last = app.comparison(steps[2]).await;
    let metric = |report: &Value, side: &str| report["metrics"][0][side]["values"].clone();
    assert_eq!(
        metric(whole, "base"),
        metric(&first["verdict"]["reports"][0], "base"),
        "{whole}"
    );
    assert_eq!(
        metric(whole, "patched"),
        metric(&last["verdict"]["reports"][0], "patched"),
        "{whole}"
    );
    assert_eq!(whole["header"]["runs_from_steps"], json!([1, 3]), "{whole}");
    let text = app
        .get(&format!("/api/v1/comparisons/{parent_id}/report.txt"))
        .await;
    assert!(
        text.body.contains(
            "runs: 3 base, 3 patched (step 1's base boots and step 3's patched boots, each \
             interleaved within its step)"
        ),
        "{}",
        text.body
    );
    for s in parent["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "done", "{s}");
        let headlines = s["headlines"].as_array().unwrap();
        assert_eq!(headlines.len(), 2, "open1 with 1 and 2 tasks: {s}");
        assert_eq!(headlines[0]["workload"], "open1");
        assert!(headlines[0]["verdict"].is_string(), "{s}");
        assert_ne!(s["overall"], "no results", "{s}");
    }
    // A step names its patch and its parent, and labels its kernels.
    let step2 = app.comparison(steps[1]).await;
    assert_eq!(
        step2["step_of"],
        json!({ "parent_id": parent_id, "step": 2, "of": 3, "subject": "[PATCH 2/3] fs: step 2" })
    );
    let header = &step2["verdict"]["reports"][0]["header"];
    assert_eq!(header["base"]["id"], "linux-source-6.1+patch 1");
    assert_eq!(header["patched"]["id"], "linux-source-6.1+patches 1..2");
    assert_eq!(header["patched"]["subject"], "[PATCH 2/3] fs: step 2");
    // Its table's columns are named by what each side adds, not cut off
    // (`linux-source-6.1+patches 1.` before).
    let step_text = app
        .get(&format!("/api/v1/comparisons/{}/report.txt", steps[1]))
        .await;
    assert!(
        step_text
            .body
            .contains(&format!("{:>16} {:>27} \n---", "+patch 1", "+patches 1..2")),
        "{}",
        step_text.body
    );

    // The series' page tables its steps, each row linking to the step's
    // page, which names its patch and links back.
    let page = app.get(&format!("/comparisons/{parent_id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Patch by patch"), "{}", page.body);
    for (k, id) in steps.iter().enumerate() {
        let row = format!("<a href=\"/comparisons/{id}\">patch {}/3</a>", k + 1);
        assert!(page.body.contains(&row), "{row} in {}", page.body);
    }
    // So does its text report, after the whole series' reports: one line
    // a patch, the headline's change and verdict at 1 and 2 tasks.
    let text = app
        .get(&format!("/api/v1/comparisons/{parent_id}/report.txt"))
        .await;
    assert_eq!(text.status, StatusCode::OK);
    let body = &text.body;
    let at = body
        .find("patch by patch: each patch against the patches before it")
        .unwrap_or_else(|| panic!("{body}"));
    assert!(body[..at].contains("commit:"), "the reports first: {body}");
    let table: Vec<&str> = body[at..].lines().skip(2).collect();
    assert_eq!(table.len(), 4, "{body}");
    assert!(
        table[0].starts_with("  patch  open1 process ×1") && table[0].ends_with("  subject"),
        "{body}"
    );
    assert!(table[0].contains("  open1 process ×2  "), "{body}");
    for (k, line) in table.iter().enumerate().skip(1) {
        assert!(line.starts_with(&format!("  {k}/3    ")), "{line}");
        assert!(
            line.ends_with(&format!("  [PATCH {k}/3] fs: step {k}")),
            "{line}"
        );
        assert_eq!(line.matches('%').count(), 2, "{line}");
        let verdicts = [
            "improvement",
            "regression",
            "changed",
            "no change",
            "undecided",
        ];
        let said: usize = verdicts.iter().map(|v| line.matches(v).count()).sum();
        assert_eq!(said, 2, "{line}");
    }
    // A step has no steps to table.
    let text = app
        .get(&format!("/api/v1/comparisons/{}/report.txt", steps[1]))
        .await;
    assert!(!text.body.contains("patch by patch"), "{}", text.body);

    let page = app.get(&format!("/comparisons/{}", steps[1])).await;
    assert!(
        page.body
            .contains("patch 2/3 “fs: step 2” against patch 1/3"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("<a href=\"/comparisons/{parent_id}\">"))
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_patch_that_does_not_apply_fails_the_steps_after_it_and_the_series(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let parent_id = submit_per_patch(&app).await;
    let steps = step_ids(&app.comparison(parent_id).await);
    for _ in 0..3 {
        let job = run_job(&app, m1).await.unwrap();
        assert_eq!(job.comparison_id, steps[0]);
    }
    let job = app.claim(m1).await.unwrap();
    assert_eq!(job.comparison_id, steps[1]);
    let finish = json!({
        "outcome": "failed",
        "reason": "patch-does-not-apply",
        "detail": "patch 2/2 \"[PATCH 2/3] fs: step 2\" does not apply to linux-source-6.1",
    });
    let a = app.job_call(m1, &job, "finish", finish).await;
    assert!(a.status.is_success(), "{a:?}");
    assert!(app.claim(m1).await.is_none(), "nothing is left to run");

    let parent = app.comparison(parent_id).await;
    assert_eq!(parent["status"], "failed", "{parent}");
    let named = "not run: patch 2/3 `[PATCH 2/3] fs: step 2` does not apply (step 2";
    for id in [steps[2], parent_id] {
        let c = app.comparison(id).await;
        assert_eq!(c["status"], "failed", "{c}");
        for j in c["jobs"].as_array().unwrap() {
            assert_eq!(j["failure"]["reason"], "patch-does-not-apply", "{j}");
            let detail = j["failure"]["detail"].as_str().unwrap();
            assert!(detail.starts_with(named), "{detail}");
        }
    }
    let listed = parent["steps"].as_array().unwrap();
    assert_eq!(listed[0]["status"], "done");
    assert_eq!(listed[0]["headlines"].as_array().unwrap().len(), 2);
    assert_ne!(listed[0]["overall"], "no results");
    assert_eq!(listed[1]["status"], "failed");
    assert!(
        listed[1]["failure"]
            .as_str()
            .unwrap()
            .contains("[PATCH 2/3] fs: step 2\" does not apply"),
        "{}",
        listed[1]
    );
    assert_eq!(listed[2]["status"], "failed");
    // The series' text report tables its steps, saying which did not apply.
    let text = app
        .get(&format!("/api/v1/comparisons/{parent_id}/report.txt"))
        .await;
    let body = &text.body;
    let at = body
        .find("patch by patch: ")
        .unwrap_or_else(|| panic!("{body}"));
    let table: Vec<&str> = body[at..].lines().skip(2).collect();
    assert!(table[2].starts_with("  2/3    failed  "), "{body}");
    assert!(
        table[3].contains("failed: patch 2/2 \"[PATCH 2/3] fs: step 2\" does not apply"),
        "{body}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn cancelling_the_series_cancels_its_steps(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let parent_id = submit_per_patch(&app).await;
    let a = app.cancel(parent_id).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    for s in app.comparison(parent_id).await["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "cancelled", "{s}");
    }
    assert!(app.claim(m1).await.is_none());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_single_patch_has_no_steps(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let id = app
        .submit(
            3,
            json!({ "per_patch": true, "mbox": patch(1), "order_seed": 7 }),
        )
        .await;
    let c = app.comparison(id).await;
    assert!(c.get("steps").is_none(), "{c}");
    assert_eq!(app.count("comparisons").await, 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_series_too_long_to_measure_patch_by_patch_is_refused_and_nothing_stored(pool: PgPool) {
    let app = TestApp::new(pool).await;
    // Each step stores patches 1..k, so the steps grow with the square of
    // the series: past the limit the submission is refused whole.
    let n = u32::try_from(mbox::prefix::MAX_STEPS).unwrap() + 1;
    let long: String = (1..=n).map(patch).collect();
    let answer = app
        .try_submit(json!({ "per_patch": true, "mbox": long }))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains(&format!("this one has {n}")),
        "{}",
        answer.body
    );
    assert_eq!(app.count("comparisons").await, 0);
    assert_eq!(app.count("patch_series").await, 0);
    // The same series as one comparison is fine.
    let whole: String = (1..=n).map(patch).collect();
    app.try_submit(json!({ "mbox": whole })).await;
    assert_eq!(app.count("comparisons").await, 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_failed_series_says_which_patch_failed_in_the_listing_and_first_in_its_answers(
    pool: PgPool,
) {
    let app = TestApp::new(pool).await;
    let m1 = app.register("m1").await;
    let parent_id = submit_per_patch(&app).await;
    for _ in 0..3 {
        run_job(&app, m1).await.unwrap();
    }
    let job = app.claim(m1).await.unwrap();
    let finish = json!({
        "outcome": "failed",
        "reason": "patch-does-not-apply",
        "detail": "error: patch failed: fs/f2.c:1",
    });
    assert!(
        app.job_call(m1, &job, "finish", finish)
            .await
            .status
            .is_success()
    );
    patchperf_server::domain::report::stored::build_stale(&app.state)
        .await
        .unwrap();

    // Not "no results": the failure, in the words of the step's page.
    let list = app.get("/api/v1/comparisons").await;
    let entry = &list.json["comparisons"][0];
    assert_eq!(entry["id"], parent_id);
    assert_eq!(entry["failure"], "patch 2/3 does not apply", "{entry}");
    let page = app.get("/").await.body;
    let row = page
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{parent_id}\"")))
        .unwrap();
    let row = crate::browser::visible_text(row);
    assert!(row.contains("patch 2/3 does not apply"), "{row}");
    assert!(row.contains("failed"), "{row}");
    assert!(!row.contains("no results"), "{row}");

    // Its JSON and report.txt say it first, the step's detail behind it.
    let c = app.comparison(parent_id).await;
    assert_eq!(c["failure"], "patch 2/3 does not apply", "{c}");
    let text = app
        .get(&format!("/api/v1/comparisons/{parent_id}/report.txt"))
        .await
        .body;
    assert!(
        text.starts_with(
            "patchperf could not measure this comparison: patch 2/3 does not apply.\n\n\
             error: patch failed: fs/f2.c:1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("job log: /jobs/{}/log", job.job_id)),
        "{text}"
    );
}
