//! The pages of tracked trees, over the tree of [`crate::trees`] (commits
//! 0 to 4, commit 2 and later 50% faster): the list, a tree's page with its
//! history plotted (the change point marked) and tabled, the history's SVG
//! on its own; the dashboard's open changes, paged, and the form that marks
//! one (an admin token, not a CI one).

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use patchperf_common::api::ChangeVerdict;
use patchperf_server::db;
use patchperf_server::db::changes::NewChange;
use patchperf_server::db::history::HistoryKey;
use patchperf_server::domain::tree;
use sqlx::PgPool;
use tower::ServiceExt;

use crate::bisection_pages::{page, row, text};
use crate::browser::{Chromium, assert_fit_a_phone};
use crate::helpers::TestApp;
use crate::trees::{Measured, measured_tree};

/// The tree with its history written: one open change point, at commit 2.
pub async fn tree_with_history(pool: PgPool) -> Measured {
    let m = measured_tree(pool).await;
    assert_eq!(tree::record_history(&m.app.state).await.unwrap(), 3);
    m
}

/// A form POSTed as a browser sends it, from page `referer`: its status,
/// `Location` and body.
async fn post_form(
    app: &TestApp,
    path: &str,
    fields: &[(&str, &str)],
    referer: &str,
) -> (StatusCode, Option<String>, String) {
    let body: String = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace(' ', "+")))
        .collect::<Vec<_>>()
        .join("&");
    let req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::REFERER, referer)
        .body(Body::from(body))
        .unwrap();
    let resp = app.app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let location = resp
        .headers()
        .get(header::LOCATION)
        .map(|l| l.to_str().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        location,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The form marking a change expected, with `token`.
fn fields(token: &str) -> Vec<(&str, &str)> {
    vec![
        ("token", token),
        ("state", "expected"),
        ("note", "step 2 is the fast path"),
    ]
}

/// Whether `text` says `before` and then a size of about 50% (the lab's
/// runs are noisy: 49.9% as well as 50.1%).
fn about_50(text: &str, before: &str) -> bool {
    text.split(before).skip(1).any(|rest| {
        rest.split('%')
            .next()
            .and_then(|n| n.parse::<f64>().ok())
            .is_some_and(|n| (n - 50.0).abs() < 1.0)
    })
}

/// The ids of the change points a page's entries show, in order.
pub fn entries(html: &str) -> Vec<i64> {
    html.split("action=\"/changes/")
        .skip(1)
        .map(|rest| rest.split('/').next().unwrap().parse().unwrap())
        .collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_page_plots_its_history_marks_the_change_and_tables_the_points(pool: PgPool) {
    let Measured {
        app,
        id,
        ids,
        comparisons,
        ..
    } = tree_with_history(pool).await;
    let short = |k: usize| ids[k][..10].to_string();

    // The list: the tree with its last tested head and one open change.
    let html = page(&app, "/trees").await;
    let line = row(&html, &format!("/trees/{id}"));
    assert!(line.starts_with("vfs.all master "), "{line}");
    assert!(line.contains(&format!("{} at ", short(4))), "{line}");
    assert!(line.ends_with(" 1"), "{line}");

    let html = page(&app, &format!("/trees/{id}")).await;
    let said = text(&html);
    assert!(said.contains("Tree vfs.all"), "{said}");
    assert!(said.contains("workloads open1"), "{said}");
    assert!(
        said.contains("parameters process, nr_task 1, 5 s measured after 1 s of warm-up"),
        "{said}"
    );
    assert!(said.contains("reports copied to linux-fsdevel@vger.kernel.org"));
    // The plot, inline, with its title and the change point marked.
    let title = "will-it-scale.per_process_ops of open1 · process · nr_task 1 on lab-1";
    let svg = &html[html.find("<svg").expect("an inline plot")..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    assert!(svg.contains(&format!("<title>{title}")), "{svg}");
    assert!(svg.contains("viewBox="), "{svg}");
    assert!(
        about_50(svg, &format!("change point at {}: improvement +", short(2))),
        "{svg}"
    );
    assert!(svg.contains(&short(4)), "commits label the ticks: {svg}");
    // Each level's band of ±δ (no A/A here: the mode's default δ).
    assert!(
        svg.contains("the grey band behind each level is its mean ± δ"),
        "{svg}"
    );
    assert_eq!(
        svg.matches("<circle").count(),
        6,
        "one point a commit, a ring round commit 2"
    );
    // Each point is a link to its comparison, with what it is on hover.
    assert!(svg.contains("<a href=\"/comparisons/"), "{svg}");
    assert!(
        svg.contains(&format!("<title>{} fs: step 2: ", short(2))),
        "{svg}"
    );
    // The table: each commit with its comparison; the change on commit 2.
    let table = &html[html
        .find("<table class=\"points\">")
        .expect("the points table")..];
    let points: Vec<String> = table
        .split("<tr")
        .filter(|r| r.contains("fs: step") || r.contains(&short(0)))
        .filter(|r| r.contains("/comparisons/"))
        .map(|r| text(&format!("<tr{}", &r[..r.find("</tr>").unwrap()])))
        .collect();
    assert_eq!(points.len(), 5, "{points:?}");
    assert!(points[2].starts_with(&format!("2 {} fs: step 2 Kernel Hacker", short(2))));
    assert!(about_50(&points[2], "improvement +"), "{}", points[2]);
    assert!(!points[3].contains("improvement"), "{}", points[3]);
    assert!(
        points[4].contains(" 3 comparison "),
        "three runs: {}",
        points[4]
    );
    // The change point, open, with the form that marks it.
    assert!(
        said.contains(&format!("vfs.all: {} fs: step 2", short(2))),
        "{said}"
    );
    assert!(said.contains("found "), "{said}");
    assert_eq!(entries(&html).len(), 1);

    // The plot on its own: the one history by default; a wrong value is
    // answered with the histories there are.
    let a = app.get(&format!("/trees/{id}/plots/history.svg")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert!(
        a.body.starts_with("<svg") && a.body.contains(title),
        "{}",
        a.body
    );
    let href = html
        .split("href=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .find(|h| h.contains("/plots/history.svg"))
        .expect("the plot links to its SVG")
        .replace("&amp;", "&");
    assert_eq!(app.get(&href).await.body, a.body);
    // Each history links to its own JSON (a tree of several workloads has
    // several, and a link without the query would answer 400).
    let json_href = html
        .split("href=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .find(|h| h.starts_with(&format!("/api/v1/trees/{id}/history?")))
        .expect("the history links to its JSON")
        .replace("&amp;", "&");
    let history = app.get(&json_href).await;
    assert_eq!(history.status, StatusCode::OK, "{history:?}");
    assert_eq!(history.json["workload"], "open1");
    let a = app
        .get(&format!("/trees/{id}/plots/history.svg?workload=dup1"))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let listed = "workload=open1&mode=process&nr_task=1\
                  &metric=will-it-scale.per_process_ops&machine=lab-1&measurement=";
    assert!(text(&a.body).contains(listed), "{}", a.body);
    let a = app.get("/trees/99").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.body.contains("no tree 99"), "{}", a.body);

    // And a browser shows the same.
    if let Some(chromium) = Chromium::find() {
        let server =
            patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
                .await;
        let dom = chromium
            .dump_dom(&format!("{}/trees/{id}", server.url()))
            .await;
        assert!(dom.contains("<svg"), "{dom}");
        assert!(
            dom.contains(&format!("change point at {}", short(2))),
            "{dom}"
        );
        assert!(
            dom.contains(&format!("href=\"/comparisons/{}\"", comparisons[1])),
            "{dom}"
        );
        assert!(text(&dom).contains("Change points"), "{dom}");
        // On a phone too: the repository's URL wraps, the tables scroll in
        // their own box, the plot scales to the screen.
        let urls =
            ["/trees".to_string(), format!("/trees/{id}")].map(|p| format!("{}{p}", server.url()));
        assert_fit_a_phone(&chromium, &urls).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_comparison_links_its_tree_history_and_change_point(pool: PgPool) {
    let Measured {
        app,
        id,
        comparisons,
        ..
    } = measured_tree(pool).await;
    // Its page, rendered once settled and kept, before the history is
    // written and the change point found.
    let before = page(&app, &format!("/comparisons/{}", comparisons[1])).await;
    assert!(!before.contains("#change-"), "{before}");
    assert_eq!(tree::record_history(&app.state).await.unwrap(), 3);
    let changes = app.get(&format!("/api/v1/changes?tree={id}")).await.json;
    let change = changes["changes"][0]["id"].as_i64().unwrap();
    // The tree's page has the places the links go to.
    let tree = page(&app, &format!("/trees/{id}")).await;
    assert!(tree.contains("<h2 id=\"history\">"), "{tree}");
    assert!(tree.contains(&format!("id=\"change-{change}\"")), "{tree}");

    // The push that measured commit 2 links the tree, its history and the
    // change point found there, before its reports.
    let html = page(&app, &format!("/comparisons/{}", comparisons[1])).await;
    assert!(
        html.contains(&format!("<a href=\"/trees/{id}\">vfs.all</a>")),
        "{html}"
    );
    assert!(
        html.contains(&format!("href=\"/trees/{id}#history\"")),
        "{html}"
    );
    assert!(
        html.contains(&format!("href=\"/trees/{id}#change-{change}\"")),
        "{html}"
    );
    let said = text(&html);
    let at = said
        .find("change point: improvement +")
        .unwrap_or_else(|| panic!("{said}"));
    assert!(about_50(&said[at..], "improvement +"), "{}", &said[at..]);
    assert!(
        said[at..].contains("of will-it-scale.per_process_ops of open1 ×1"),
        "{said}"
    );
    assert!(at < said.find("Boot order").unwrap(), "{said}");

    // The first push (commit 1) and the steps of the last (commits 3 and
    // 4) link the tree and its history, and no change point.
    let steps = app.comparison(comparisons[2]).await["steps"].clone();
    let mut others = vec![comparisons[0], comparisons[2]];
    others.extend(
        steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["comparison_id"].as_i64().unwrap()),
    );
    for other in others {
        let html = page(&app, &format!("/comparisons/{other}")).await;
        assert!(
            html.contains(&format!("href=\"/trees/{id}#history\"")),
            "{other}: {html}"
        );
        assert!(!html.contains("#change-"), "{other}: {html}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_page_shows_what_moved_first(pool: PgPool) {
    let Measured {
        app,
        id,
        ids,
        comparisons,
        ..
    } = tree_with_history(pool).await;
    // A flat history beside the one with the change point, named so that
    // it sorts first.
    let histories = db::history::of_tree(&app.pool, id).await.unwrap();
    let changed = &histories[0];
    let flat_metric = "perf-stat.ps.context-switches";
    assert!(flat_metric < changed.metric.as_str());
    let key = HistoryKey {
        metric: flat_metric.into(),
        ..changed.key(id)
    };
    let mut conn = app.pool.acquire().await.unwrap();
    for (k, commit) in ids.iter().enumerate() {
        let point = db::history::NewPoint {
            key: key.clone(),
            position: i32::try_from(k).unwrap(),
            commit_sha: commit.clone(),
            runs: vec![100.0, 100.1, 99.9],
            mean: 100.0,
            interval: Some((99.8, 100.2)),
            comparison_id: comparisons[k.saturating_sub(2).min(2)],
        };
        db::history::insert(&mut conn, &point).await.unwrap();
    }
    drop(conn);

    let said = text(&page(&app, &format!("/trees/{id}")).await);
    let at = |what: &str| said.find(what).unwrap_or_else(|| panic!("{what}: {said}"));
    let moved = at(&format!("{} of open1", changed.metric));
    let points = at("Change points");
    let flat = at(&format!("{flat_metric} of open1"));
    assert!(
        at("Histories with a change point") < moved && moved < points && points < flat,
        "{said}"
    );
    assert!(at("Histories without a change point") < flat, "{said}");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_dashboard_pages_open_changes_and_its_form_marks_them(pool: PgPool) {
    let Measured {
        app,
        id,
        ids,
        machine,
        comparisons,
        ..
    } = tree_with_history(pool).await;
    let short = |k: usize| ids[k][..10].to_string();
    let html = page(&app, "/").await;
    let found = entries(&html);
    assert_eq!(found.len(), 1, "{html}");
    let first = found[0];
    let said = text(&html);
    assert!(
        said.contains(&format!(
            "vfs.all: {} fs: step 2 by Kernel Hacker <kh@example.org>",
            short(2)
        )),
        "{said}"
    );
    assert!(
        said.contains("will-it-scale.per_process_ops of open1 (process, nr_task 1) on lab-1"),
        "{said}"
    );
    assert!(about_50(&said, "): +"), "{said}");
    assert!(said.contains("patchperf-server token create --kind admin"));
    assert!(html.contains(&format!("href=\"/comparisons/{}\"", comparisons[1])));
    assert!(html.contains("class=\"change-entry verdict-improvement state-open\""));
    assert!(html.contains("<span class=\"verdict\" title=\"improvement\">I</span>"));

    // 25 more, at commits 3 and 4 of made-up histories: 20 a page.
    let mut conn = app.pool.acquire().await.unwrap();
    let mut made = Vec::new();
    for k in 0..25 {
        let metric = format!("perf-stat.i.metric-{k}");
        let key = HistoryKey {
            tree_id: id,
            workload: "open1".into(),
            mode: "process".into(),
            nr_task: 1,
            metric,
            machine_id: machine,
            measurement: "tcg-icount".into(),
        };
        let c = NewChange {
            key: &key,
            position: 3,
            from_position: 2,
            commit_sha: &ids[3],
            mean_before: 100.0,
            mean_after: 90.0,
            change_percent: -10.0,
            interval: Some((-12.0, -8.0)),
            p: 0.001,
            verdict: ChangeVerdict::Regression,
            comparison_id: comparisons[2],
        };
        made.push(db::changes::insert(&mut conn, &c).await.unwrap().unwrap());
    }
    drop(conn);
    let html = page(&app, "/").await;
    let shown = entries(&html);
    let newest: Vec<i64> = made.iter().rev().take(20).copied().collect();
    assert_eq!(shown, newest, "the newest 20, newest first");
    let older = format!("/?changes_before={}", newest[19]);
    assert!(html.contains(&format!("href=\"{older}\"")), "{html}");
    let html = page(&app, &older).await;
    let mut rest: Vec<i64> = made.iter().rev().skip(20).copied().collect();
    rest.push(first);
    assert_eq!(entries(&html), rest);
    assert!(!html.contains("changes_before="), "the last page");
    // A browser pages the same way.
    if let Some(chromium) = Chromium::find() {
        let server =
            patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
                .await;
        let dom = chromium.dump_dom(&format!("{}/", server.url())).await;
        assert_eq!(entries(&dom), newest, "{dom}");
        assert!(dom.contains(&format!("href=\"{older}\"")), "{dom}");
        let dom = chromium.dump_dom(&format!("{}{older}", server.url())).await;
        assert_eq!(entries(&dom), rest, "{dom}");
        server.stop().await;
    }

    // The form: a CI token is refused, so is a made-up one; an admin's marks
    // it and goes back to the page it came from.
    let path = format!("/changes/{first}/acknowledge");
    let referer = format!("http://perf.example.org{older}");
    let (ci, admin) = (app.ci.as_str(), app.admin.as_str());
    let (status, _, body) = post_form(&app, &path, &fields(ci), &referer).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("<h1>403 Forbidden</h1>"), "{body}");
    assert!(body.contains("requires a `admin` token"), "{body}");
    let (status, _, body) = post_form(&app, &path, &fields("ppf_admin_nope"), &referer).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(body.contains("<h1>401 Unauthorized</h1>"), "{body}");
    assert!(body.contains("unknown token"), "{body}");
    let (status, _, body) = post_form(&app, &path, &fields(""), &referer).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let wrong = vec![("token", admin), ("state", "fixed")];
    let (status, _, body) = post_form(&app, &path, &wrong, &referer).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(entries(&page(&app, &older).await).contains(&first));
    let (status, location, body) = post_form(&app, &path, &fields(admin), &referer).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(location.as_deref(), Some(older.as_str()));
    assert!(!entries(&page(&app, &older).await).contains(&first));
    let a = app.get("/api/v1/changes?state=expected").await;
    assert_eq!(a.json["changes"][0]["note"], "step 2 is the fast path");
    // Its tree's page still lists it, marked, without a form.
    let html = page(&app, &format!("/trees/{id}")).await;
    let marked = text(&html);
    let marked = marked
        .split_once("expected by operator, ")
        .map(|(_, after)| after)
        .unwrap_or_else(|| panic!("who marked it: {html}"));
    assert!(
        marked.contains(" UTC: step 2 is the fast path"),
        "when, then the note: {marked}"
    );
    // The entry says what its size compares, and what its comparison does.
    assert!(
        text(&html).contains("the history's level after this commit against the level before it"),
        "{html}"
    );
    assert!(!entries(&html).contains(&first));
    // The list counts the 25 still open.
    assert!(row(&page(&app, "/trees").await, &format!("/trees/{id}")).ends_with(" 25"));
}

/// The ids of every change point entry on a page, marked or open, in order.
pub fn every_entry(html: &str) -> Vec<i64> {
    html.split("<div id=\"change-")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
        .collect()
}

/// `/changes` lists every tree's change points, newest first, 30 a page,
/// marked ones too, and by state; the menu leads there.
#[sqlx::test(migrations = "../migrations")]
async fn every_change_point_is_listed_on_its_own_page(pool: PgPool) {
    let Measured {
        app,
        id,
        ids,
        machine,
        comparisons,
        ..
    } = tree_with_history(pool).await;
    let first = every_entry(&page(&app, "/").await)[0];
    let mut conn = app.pool.acquire().await.unwrap();
    let mut made = vec![first];
    for k in 0..31 {
        let key = HistoryKey {
            tree_id: id,
            workload: "open1".into(),
            mode: "process".into(),
            nr_task: 1,
            metric: format!("perf-stat.i.metric-{k}"),
            machine_id: machine,
            measurement: "tcg-icount".into(),
        };
        let c = NewChange {
            key: &key,
            position: 3,
            from_position: 2,
            commit_sha: &ids[3],
            mean_before: 100.0,
            mean_after: 90.0,
            change_percent: -10.0,
            interval: Some((-12.0, -8.0)),
            p: 0.001,
            verdict: ChangeVerdict::Regression,
            comparison_id: comparisons[2],
        };
        made.push(db::changes::insert(&mut conn, &c).await.unwrap().unwrap());
    }
    drop(conn);
    let a = app
        .post(
            &format!("/api/v1/changes/{first}/acknowledge"),
            &app.admin,
            serde_json::json!({ "state": "expected", "note": "step 2 is the fast path" }),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let newest: Vec<i64> = made.iter().rev().copied().collect();

    let html = page(&app, "/changes").await;
    assert_eq!(every_entry(&html), newest[..30], "{html}");
    let older = format!("/changes?before={}", newest[29]);
    assert!(html.contains(&format!("href=\"{older}\"")), "{html}");
    let html = page(&app, &older).await;
    assert_eq!(every_entry(&html), newest[30..], "marked ones too: {html}");
    assert!(text(&html).contains("expected by operator, "), "{html}");
    assert!(!html.contains("?before="), "the last page: {html}");
    let html = page(&app, "/changes?state=expected").await;
    assert_eq!(every_entry(&html), [first], "{html}");
    let html = page(&app, "/changes?state=open").await;
    assert!(!every_entry(&html).contains(&first), "{html}");
    assert!(
        html.contains("href=\"/changes?state=open&#38;before="),
        "{html}"
    );
    assert_eq!(
        app.get("/changes?state=fixed").await.status,
        StatusCode::BAD_REQUEST
    );

    let Some(chromium) = Chromium::find() else {
        return;
    };
    let server =
        patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
            .await;
    let dom = chromium.dump_dom(&format!("{}/", server.url())).await;
    assert!(dom.contains("<a href=\"/changes\">changes</a>"), "{dom}");
    let dom = chromium
        .dump_dom(&format!("{}/changes?state=expected", server.url()))
        .await;
    assert_eq!(every_entry(&dom), [first], "{dom}");
    assert!(
        text(&dom).contains("any · open · acknowledged · expected"),
        "{dom}"
    );
    let urls = vec![format!("{}/changes", server.url())];
    assert_fit_a_phone(&chromium, &urls).await;
    server.stop().await;
}

/// Every text of the first history plot as laid out, and the colour of the
/// change point labels, as `{texts: [{text, box}], changes: [{text, fill}]}`.
const HISTORY_TEXT: &str = r#"(() => {
  const svg = [...document.querySelectorAll('div.plot.history svg')]
    .find(s => s.getBoundingClientRect().width > 0);
  if (!svg) return null;
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const sizes = [...svg.querySelectorAll('text')]
    .filter(t => t.textContent.trim())
    .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  const texts = [...svg.querySelectorAll('text')]
    .filter(t => t.textContent.trim())
    .map(t => { const r = t.getBoundingClientRect();
                return { text: t.textContent.trim(), box: [r.left, r.top, r.right, r.bottom] }; });
  const changes = [...svg.querySelectorAll('text')]
    .filter(t => /^(improvement|regression|changed) /.test(t.textContent.trim()))
    .map(t => ({ text: t.textContent.trim(), fill: t.getAttribute('fill') }));
  return { texts, changes, smallest_px: Math.min(...sizes), screen: window.innerWidth,
           page: document.documentElement.scrollWidth };
})()"#;

/// The history plot of a tree with two change points a commit apart:
/// no label runs into another (the ticks' commits and dates, the change
/// points' sizes), and an improvement is drawn green, not red; on a
/// desktop and on a 390 px phone alike, with no text under 12 px.
#[sqlx::test(migrations = "../migrations")]
async fn a_history_plots_labels_do_not_overlap_and_an_improvement_is_green(pool: PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let Measured {
        app,
        id,
        ids,
        machine,
        comparisons,
        ..
    } = tree_with_history(pool).await;
    // A second level shift on the same history, at commit 3.
    let key = HistoryKey {
        tree_id: id,
        workload: "open1".into(),
        mode: "process".into(),
        nr_task: 1,
        metric: "will-it-scale.per_process_ops".into(),
        machine_id: machine,
        measurement: "tcg-icount".into(),
    };
    let second = NewChange {
        key: &key,
        position: 3,
        from_position: 2,
        commit_sha: &ids[3],
        mean_before: 150.0,
        mean_after: 160.0,
        change_percent: 6.7,
        interval: Some((5.9, 7.5)),
        p: 0.001,
        verdict: ChangeVerdict::Improvement,
        comparison_id: comparisons[2],
    };
    let mut conn = app.pool.acquire().await.unwrap();
    db::changes::insert(&mut conn, &second)
        .await
        .unwrap()
        .unwrap();
    drop(conn);
    let server =
        patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
            .await;
    // On a desktop and on a phone, each with the plot drawn for its width.
    for (width, height) in [(1400, 900), (390, 844)] {
        let screen = crate::browser::Viewport { width, height };
        let plot = chromium
            .evaluate(
                &format!("{}/trees/{id}", server.url()),
                screen,
                HISTORY_TEXT,
            )
            .await;
        let smallest = plot["smallest_px"].as_f64().expect("a history plot");
        assert!(
            smallest >= 11.5,
            "at {width} px the plot's smallest text is {smallest:.1} px"
        );
        assert!(
            plot["page"].as_f64().unwrap() <= f64::from(width),
            "at {width} px the page scrolls sideways: {plot}"
        );
        let texts = plot["texts"].as_array().expect("a history plot");
        let boxes: Vec<(String, [f64; 4])> = texts
            .iter()
            .map(|t| {
                let b: Vec<f64> = t["box"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                (
                    t["text"].as_str().unwrap().to_string(),
                    [b[0], b[1], b[2], b[3]],
                )
            })
            .collect();
        let mut overlapping = Vec::new();
        for (i, (a, p)) in boxes.iter().enumerate() {
            for (b, q) in &boxes[i + 1..] {
                // A pixel of slack: glyph boxes of neighbouring lines touch.
                if p[0] < q[2] - 1.0 && q[0] < p[2] - 1.0 && p[1] < q[3] - 1.0 && q[1] < p[3] - 1.0
                {
                    overlapping.push(format!("{a:?} and {b:?}"));
                }
            }
        }
        assert!(
            overlapping.is_empty(),
            "overlapping labels: {overlapping:#?}"
        );
        let changes = plot["changes"].as_array().unwrap();
        assert_eq!(changes.len(), 2, "{plot}");
        for c in changes {
            assert_eq!(c["fill"], "#11772D", "an improvement in green: {c}");
        }
    }
    server.stop().await;
}
