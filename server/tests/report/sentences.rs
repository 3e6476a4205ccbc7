//! The sentences a person reads, as headless Chromium shows them (issue
//! 41): a verdict said the same way in every place it appears, and no
//! sentence with stray punctuation.

use patchperf_common::run::Side;
use patchperf_testkit::TestServer;

use crate::browser::{Chromium, Viewport};
use crate::helpers::{TestApp, run_result};

const DESKTOP: Viewport = Viewport {
    width: 1400,
    height: 900,
};

/// The comparison page's bold lines and the group's headline sentence, as
/// laid out.
const VERDICT_LINES: &str = r#"(() => ({
  answer: document.querySelector('p.answer').innerText,
  overall: document.querySelector('p.overall').innerText,
  headline: document.querySelector('p.headline').innerText,
}))()"#;

/// The first dashboard row's verdict cell.
const DASHBOARD_VERDICT: &str = r#"(() => {
  const cell = document.querySelector('table.comparisons tbody tr td.verdict');
  return cell ? cell.innerText : null;
})()"#;

/// −0.3% with boots agreeing to 0.01%, under tcg-icount's default δ of
/// 0.5%: real, but below δ, which counts as no change. Every bold verdict
/// says both, and the headline sentence ends without a stray comma.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn real_but_below_delta_is_said_in_every_verdict_a_reader_sees(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app
        .submit("[PATCH] fs: a tiny dup loss", "lab", &[1], 3)
        .await;
    // Each side with its own 0.001% of boot-to-boot noise.
    app.run_all(lab, |side, seq, _| {
        let noise = 1.0 + 0.00001 * f64::from(seq % 3);
        match side {
            Side::Base => 100_000.0 * noise,
            Side::Patched => 99_700.0 / noise,
        }
    })
    .await;
    app.build_reports().await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;

    let page = chromium
        .evaluate(
            &format!("{}/comparisons/{id}", server.url()),
            DESKTOP,
            VERDICT_LINES,
        )
        .await;
    eprintln!("the page's verdicts: {page:#}");
    let said = |k: &str| page[k].as_str().unwrap_or_default().to_string();
    assert!(said("answer").starts_with("real, below δ: -0.3%"), "{page}");
    assert_eq!(said("overall"), "verdict: no change (real, below δ)");
    // Boots agreeing to 0.001%: an interval a few thousandths of a point
    // wide, whose ends differ in the digits shown all the same.
    let answer = said("answer");
    let ends = answer
        .split_once("95% interval ")
        .and_then(|(_, rest)| rest.split_once(','))
        .map(|(interval, _)| interval.split(" … ").collect::<Vec<_>>())
        .unwrap_or_else(|| panic!("no interval in {answer}"));
    assert_eq!(ends.len(), 2, "{answer}");
    assert_ne!(ends[0], ends[1], "the ends read the same: {answer}");
    let headline = said("headline");
    assert!(
        headline.ends_with(" but below the default δ of 0.5%."),
        "{headline}"
    );
    assert!(!headline.contains(",."), "{headline}");

    let row = chromium
        .evaluate(&format!("{}/", server.url()), DESKTOP, DASHBOARD_VERDICT)
        .await;
    assert_eq!(row, "no change (real, below δ)");
    server.stop().await;
}

/// Two base runs and one patched are in, the rest to come: the page's
/// answer has no interval or q yet, and says the runs without a stray
/// "(;" where they would have been.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_running_comparisons_answer_has_no_stray_semicolon(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    let (mut base, mut patched) = (0, 0);
    while base < 2 || patched < 1 {
        let spec = app.claim(lab).await.expect("a job to run");
        for boot in &spec.boots {
            let wanted = match boot.side {
                Side::Base => &mut base,
                Side::Patched => &mut patched,
            };
            let enough = if boot.side == Side::Base { 2 } else { 1 };
            if *wanted < enough {
                *wanted += 1;
                let ops = crate::helpers::faster(boot.side, boot.seq, 1);
                app.upload(lab, &spec, *boot, run_result(1, ops)).await;
            }
        }
        if base < 2 || patched < 1 {
            app.finish_done(lab, &spec).await;
        }
    }
    app.build_reports().await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let page = chromium
        .evaluate(
            &format!("{}/comparisons/{id}", server.url()),
            DESKTOP,
            VERDICT_LINES,
        )
        .await;
    let answer = page["answer"].as_str().expect("an answer");
    assert!(answer.contains(" (2 and 1 runs, tcg-icount; "), "{answer}");
    assert!(!answer.contains("(;"), "{answer}");
    server.stop().await;
}

/// The answer, the detail behind it and the overall line of a failed
/// comparison's page, as laid out.
const FAILURE_LINES: &str = r#"(() => ({
  answer: document.querySelector('section.summary p.answer').innerText,
  detail: document.querySelector('pre.failure-detail')?.innerText ?? null,
  overall: document.querySelector('p.overall').innerText,
}))()"#;

/// The inner text of the element `selector` names, or null.
fn text_of(selector: &str) -> String {
    format!("document.querySelector('{selector}')?.innerText ?? null")
}

/// Fails the next job `machine` claims with `reason` and the runner's
/// `detail`; returns the job's id.
async fn fail_next(app: &TestApp, machine: i64, reason: &str, detail: &str) -> i64 {
    let spec = app.claim(machine).await.expect("a job to fail");
    let finish = serde_json::json!({ "outcome": "failed", "reason": reason, "detail": detail });
    let a = app.job_call(machine, &spec, "finish", finish).await;
    assert!(a.status.is_success(), "{a:?}");
    spec.job_id
}

/// What `runner/src/kernel/pipeline/prepare.rs` writes when `git apply`
/// rejects the one patch of a series, hunk and all.
const DOES_NOT_APPLY: &str = "patch 1/1 \"[PATCH] fs: a dup win\" does not apply to \
    linux-source-6.1 (for the patched kernel):\nerror: patch failed: fs/file.c:12\nerror: \
    fs/file.c: patch does not apply\nrejected hunk (fs/file.c:12):\n@@ -12,3 +12,3 @@\n \tint fd;\n\
    -\tfd = get_unused_fd();\n+\tfd = get_unused_fd_flags(0);\n";

/// A patch that does not apply and one that does not build: each says so
/// first, in the runner's words said once, where "no results … yet" stood:
/// its page (with the hunk), its report.txt, its JSON and its machine's
/// page.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_failed_comparison_says_why_first_wherever_it_is_shown(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let stale = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    let job = fail_next(&app, lab, "patch-does-not-apply", DOES_NOT_APPLY).await;
    let broken = app.submit("[PATCH] fs: a dup loss", "lab", &[1], 3).await;
    let error = "fs/file.c:12:5: error: 'fd' undeclared";
    fail_next(&app, lab, "build-failed", &format!("build failed: {error}")).await;
    app.build_reports().await;

    let apply = "patch 1/1 \"[PATCH] fs: a dup win\" does not apply to linux-source-6.1 (for the \
                 patched kernel): error: patch failed: fs/file.c:12";
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{stale}/report.txt"))
        .await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..5],
        [
            &format!("patchperf could not measure this comparison: {apply}.") as &str,
            "",
            "error: fs/file.c: patch does not apply",
            "rejected hunk (fs/file.c:12):",
            "@@ -12,3 +12,3 @@",
        ],
        "{text}"
    );
    assert!(
        text.contains(&format!("\njob log: /jobs/{job}/log\n")),
        "{text}"
    );
    assert!(!text.contains("no results"), "{text}");
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{broken}/report.txt"))
        .await;
    assert!(
        text.starts_with(&format!(
            "patchperf could not measure this comparison: build failed: {error}.\n"
        )),
        "{text}"
    );
    let json = app.get_json(&format!("/api/v1/comparisons/{stale}")).await;
    assert_eq!(json["failure"], apply, "{json:#}");

    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let page = chromium
        .evaluate(
            &format!("{}/comparisons/{stale}", server.url()),
            DESKTOP,
            FAILURE_LINES,
        )
        .await;
    eprintln!("the failed page's first lines: {page:#}");
    assert_eq!(page["answer"], format!("failed: {apply}"), "{page}");
    let detail = page["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("error: fs/file.c: patch does not apply\nrejected hunk")
            && detail.ends_with("+\tfd = get_unused_fd_flags(0);"),
        "{detail}"
    );
    assert_eq!(page["overall"], "verdict: failed");

    let machine = chromium
        .evaluate(
            &format!("{}/machines/lab", server.url()),
            DESKTOP,
            &text_of("table.comparisons"),
        )
        .await;
    let machine = machine.as_str().unwrap_or_default();
    eprintln!("the machine's comparisons: {machine}");
    assert!(
        machine.contains(&format!("{stale}\tfailed\t{apply}\t[PATCH] fs: a dup win")),
        "{machine}"
    );
    assert!(
        machine.contains(&format!(
            "{broken}\tfailed\tbuild failed: {error}\t[PATCH] fs: a dup loss"
        )),
        "{machine}"
    );
    assert!(!machine.contains("no results"), "{machine}");
    server.stop().await;
}

/// An A/A comparison is a calibration wherever it is named, and answers
/// first with the noise floor it measured and the δ that gives, the floor
/// the machine's next A/B was judged with; its report names no
/// `linux-source-6.1+e3b0c44298` (the hash of its empty series), and its
/// machine's page lists it apart from what the machine compared.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn an_aa_calibration_is_named_so_and_answers_with_its_noise_floor(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    let aa = app.submit_aa("lab", 3).await;
    // Boots of one kernel within 0.02% of each other.
    app.run_all(lab, |_, seq, _| {
        100_000.0 * (1.0 + 0.0001 * f64::from(seq % 3))
    })
    .await;
    let ab = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    app.run_all(lab, crate::helpers::faster).await;
    app.build_reports().await;

    // The floor the A/B was judged with, as its report says it.
    let view = app.get_json(&format!("/api/v1/comparisons/{ab}")).await;
    let source = view["verdict"]["reports"][0]["header"]["delta_source"]
        .as_str()
        .unwrap();
    let floor = source
        .split_once(&format!("A/A comparison {aa} measured "))
        .and_then(|(_, rest)| rest.split_once(' '))
        .map(|(floor, _)| floor)
        .unwrap_or_else(|| panic!("no floor of {aa} in {source}"));
    assert!(
        source.starts_with("δ 0.10%: tcg-icount's minimum δ"),
        "{source}"
    );
    let answer = format!("noise floor {floor} → δ 0.1%");
    let name = "A/A calibration of dup1 on lab (tcg-icount)";

    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{aa}/report.txt"))
        .await;
    assert_eq!(
        text.lines().next(),
        Some(format!("{name}: {answer} for dup1 · process · nr_task 1").as_str()),
        "{text}"
    );
    assert!(text.contains(&format!("\ncalibration: {name}\n")), "{text}");
    assert!(!text.contains("e3b0c44298"), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("commit: linux")),
        "{text}"
    );

    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let page = chromium
        .evaluate(
            &format!("{}/comparisons/{aa}", server.url()),
            DESKTOP,
            r#"(() => ({
  title: document.querySelector('h1').innerText,
  answer: document.querySelector('p.answer').innerText,
  overall: document.querySelector('p.overall').innerText,
}))()"#,
        )
        .await;
    eprintln!("the calibration's first lines: {page:#}");
    assert_eq!(
        page["title"],
        format!("{name}: linux-source-6.1 against itself")
    );
    let said = page["answer"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(&format!(
            "calibration: {answer}, from will-it-scale.per_process_ops of one kernel against \
             itself on dup1 · process · nr_task 1 (95% interval "
        )),
        "{said}"
    );
    assert!(
        said.ends_with("3 and 3 runs, tcg-icount; δ is 2 × the floor, at least tcg-icount's 0.1%)"),
        "{said}"
    );
    assert_eq!(page["overall"], "calibration: done");

    let url = format!("{}/machines/lab", server.url());
    let calibrations = chromium
        .evaluate(&url, DESKTOP, &text_of("table.calibrations"))
        .await;
    let calibrations = calibrations.as_str().unwrap_or_default();
    assert!(
        calibrations.contains(&format!(
            "{aa}\tcalibration\tdup1 nr_task 1: {answer}\t{name}"
        )),
        "{calibrations}"
    );
    assert!(!calibrations.contains("fs: a dup win"), "{calibrations}");
    let compared = chromium
        .evaluate(&url, DESKTOP, &text_of("table.comparisons"))
        .await;
    let compared = compared.as_str().unwrap_or_default();
    assert!(compared.contains("[PATCH] fs: a dup win"), "{compared}");
    assert!(!compared.contains("A/A"), "{compared}");
    server.stop().await;
}
