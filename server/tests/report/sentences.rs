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
