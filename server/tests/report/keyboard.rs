//! The pages without a mouse, in headless Chromium: a skip link is the
//! first thing a Tab reaches and leads to the content, and what pointing
//! at a verdict shows can be opened from the keyboard.

use patchperf_testkit::TestServer;

use crate::browser::{Chromium, Viewport};
use crate::completed_comparison;
use crate::helpers::TestApp;

const DESKTOP: Viewport = Viewport {
    width: 1400,
    height: 900,
};

/// The page's first focusable element, where it leads, and where it is
/// once it has the focus.
const FIRST_TAB_STOP: &str = r#"(() => {
  const focusable = 'a[href], button, input, select, textarea, summary, [tabindex]';
  const first = [...document.querySelectorAll(focusable)]
    .find(e => e.tabIndex >= 0 && !e.disabled);
  if (!first) return null;
  first.focus();
  const r = first.getBoundingClientRect();
  const target = document.getElementById((first.getAttribute('href') || '').replace(/^#/, ''));
  return { text: first.textContent.trim(), href: first.getAttribute('href'),
           focused: document.activeElement === first,
           shown: r.width > 1 && r.height > 1 && r.top >= 0 && r.left >= 0,
           target: target ? target.tagName.toLowerCase() : null };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn every_page_starts_with_a_skip_link_to_its_content(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: a dup win").await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let pages = [
        "/".to_string(),
        format!("/comparisons/{id}"),
        format!("/comparisons/{id}/metrics"),
        "/trees".into(),
        "/changes".into(),
        "/lists".into(),
        "/bisections".into(),
        "/machines".into(),
        "/machines/lab1".into(),
        "/jobs/1/log".into(),
        "/comparisons/999".into(),
    ];
    let mut wrong = Vec::new();
    for page in &pages {
        let first = chromium
            .evaluate(&format!("{}{page}", server.url()), DESKTOP, FIRST_TAB_STOP)
            .await;
        let right = first["href"] == "#content"
            && first["target"] == "main"
            && first["focused"] == true
            && first["shown"] == true;
        if !right {
            wrong.push(format!("{page}: {first}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    server.stop().await;
}

/// The first verdict of the report table: whether it is a control the
/// keyboard reaches, and the text it shows once activated.
const VERDICT_DETAIL: &str = r#"(() => {
  const cell = document.querySelector('table.report td.verdict');
  if (!cell) return null;
  const control = cell.querySelector('summary, button, a[href], [tabindex]');
  if (!control) return { control: false, shown: cell.innerText };
  control.focus();
  const focused = document.activeElement === control;
  control.click();
  return { control: true, focused, shown: cell.innerText };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_verdicts_details_open_from_the_keyboard(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: a dup win").await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let verdict = chromium
        .evaluate(
            &format!("{}/comparisons/{id}", server.url()),
            DESKTOP,
            VERDICT_DETAIL,
        )
        .await;
    assert_eq!(verdict["control"], true, "{verdict}");
    assert_eq!(verdict["focused"], true, "{verdict}");
    let shown = verdict["shown"].as_str().unwrap();
    assert!(
        shown.starts_with("improvement") && shown.contains("Mann–Whitney p"),
        "{verdict}"
    );
    server.stop().await;
}
