//! The report's plots as headless Chromium shows them: what is drawn for
//! runs of one measured second, and text a person can read.

use patchperf_testkit::TestServer;
use patchperf_testkit::runs::run_result;

use crate::browser::{Chromium, Viewport};
use crate::helpers::{TestApp, faster};

const DESKTOP: Viewport = Viewport {
    width: 1400,
    height: 900,
};

/// A finished comparison of dup1 whose runs measured one second each, as
/// tcg-icount does by default.
async fn one_second_runs(app: &TestApp) -> i64 {
    let lab = app.register("lab").await;
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1], 3).await;
    while let Some(spec) = app.claim(lab).await {
        for boot in &spec.boots {
            let ops = faster(boot.side, boot.seq, 1);
            app.upload(lab, &spec, *boot, run_result("dup1", 1, vec![ops], ops))
                .await;
        }
        app.finish_done(lab, &spec).await;
    }
    app.build_reports().await;
    id
}

/// The marks in the page's per-second plot, by colour.
const PER_SECOND_MARKS: &str = r#"(() => {
  const svg = document.querySelector('div.plot.wide svg');
  if (!svg) return null;
  const dots = [...svg.querySelectorAll('circle')].map(c => c.getAttribute('fill'));
  return { dots, lines: svg.querySelectorAll('polyline').length };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn runs_of_one_second_are_drawn_in_the_per_second_plot(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let id = one_second_runs(&app).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let marks = chromium
        .evaluate(
            &format!("{}/comparisons/{id}", server.url()),
            DESKTOP,
            PER_SECOND_MARKS,
        )
        .await;
    let dots = marks["dots"].as_array().expect("a per-second plot");
    // Three runs a side, each its dot in its side's colour.
    let of = |colour: &str| dots.iter().filter(|d| *d == colour).count();
    assert_eq!((of("#1F77B4"), of("#D62728")), (3, 3), "{marks}");
    server.stop().await;
}

/// The smallest text in any plot of the page, in CSS pixels as laid out
/// (the font's size scaled as its SVG is), with that text.
const SMALLEST_PLOT_TEXT: &str = r#"(() => {
  let smallest = null;
  for (const svg of document.querySelectorAll('div.plot svg')) {
    const box = svg.viewBox.baseVal;
    const scale = box && box.width ? svg.getBoundingClientRect().width / box.width : 1;
    for (const t of svg.querySelectorAll('text')) {
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (!smallest || px < smallest.px) smallest = { px, text: t.textContent.trim() };
    }
  }
  return smallest;
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_text_of_every_plot_is_at_least_12_px(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let lab = app.register("lab").await;
    // Two task counts: the runs plots, the per-second plots and the
    // scaling plot.
    let id = app.submit("[PATCH] fs: a dup win", "lab", &[1, 2], 3).await;
    while let Some(spec) = app.claim(lab).await {
        app.run_job(lab, &spec, &[1, 2], faster, true).await;
    }
    app.build_reports().await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let smallest = chromium
        .evaluate(
            &format!("{}/comparisons/{id}", server.url()),
            DESKTOP,
            SMALLEST_PLOT_TEXT,
        )
        .await;
    let px = smallest["px"].as_f64().expect("text in the plots");
    assert!(px >= 12.0, "{smallest}");
    server.stop().await;
}
