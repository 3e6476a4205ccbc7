//! The pages of git ranges and bisections, over the played lab of
//! [`crate::bisections`]: a bisection's page answers first in 0-day's words
//! (or says how far a running one has come), lists its probes with their
//! verdicts, judgements and which kernels each built, and the series; the
//! dashboard lists bisections; a probe's page names its bisection; a range
//! comparison's page shows its short commit ids. (A not-reproducible
//! bisection's page is checked where [`crate::bisections`] makes one.)

use std::collections::HashSet;

use axum::http::StatusCode;
use patchperf_common::mbox;
use patchperf_common::protocol::JobSpec;
use patchperf_server::domain::bisection;
use serde_json::json;
use sqlx::PgPool;

use crate::bisections::{Lab, app, request, start};
use crate::browser::{Chromium, assert_fit_a_phone, visible_text};
use crate::git_repo::linear;
use crate::helpers::TestApp;

/// The text a person reads, whitespace squashed.
pub fn text(html: &str) -> String {
    visible_text(html)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A page that must be there.
pub async fn page(app: &TestApp, uri: &str) -> String {
    let a = app.get(uri).await;
    assert_eq!(a.status, StatusCode::OK, "{uri}: {a:?}");
    a.body
}

/// The row of the table whose cells link to `href`, as text.
pub fn row(html: &str, href: &str) -> String {
    let row = html
        .split("<tr")
        .find(|r| r.contains(&format!("href=\"{href}\"")))
        .unwrap_or_else(|| panic!("no row links to {href}: {html}"));
    text(&format!(
        "<tr{}",
        &row[..row.find("</tr>").unwrap_or(row.len())]
    ))
}

/// Says what the runner's kernel pipeline says while building: the
/// pristine kernel once, each patched kernel the first time, then found
/// in the cache (the runner's cache is `built`).
async fn building(app: &TestApp, machine: i64, job: &JobSpec, built: &mut HashSet<usize>) {
    let commits = mbox::prefixes(&job.mbox).len();
    let mut said = Vec::new();
    if built.insert(0) {
        said.extend(["configuring the base kernel", "building the base kernel"].map(String::from));
    }
    said.push(if built.insert(commits) {
        format!("building the patched kernel ({commits} patches, {commits} files)")
    } else {
        "patched kernel found in the cache".to_string()
    });
    for message in said {
        let body = json!({ "state": "building", "message": message });
        let a = app.job_call(machine, job, "state", body).await;
        assert!(a.status.is_success(), "{a:?}");
    }
}

/// [`Lab::drain`] with the pipeline's building messages.
async fn drain_building(lab: &Lab, app: &TestApp, machine: i64, built: &mut HashSet<usize>) {
    loop {
        bisection::advance_all(&app.state).await.unwrap();
        let Some(job) = app.claim(machine).await else {
            return;
        };
        building(app, machine, &job, built).await;
        lab.run(app, machine, &job).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_found_bisection_page_answers_first_then_probes_kernels_and_series(pool: PgPool) {
    let (repo, ids) = linear(7);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();
    let id = start(&app, request(url, &ids[0], "master")).await;
    let lab = Lab {
        culprit: Some(5),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    drain_building(&lab, &app, m, &mut HashSet::new()).await;
    let view = app.get(&format!("/api/v1/bisections/{id}")).await.json;
    assert_eq!(view["status"], "done", "{view:#}");

    let html = page(&app, &format!("/bisections/{id}")).await;
    let said = text(&html);
    let short = |k: usize| ids[k][..10].to_string();
    // The answer comes first, in 0-day's words.
    let answer = format!("first bad commit: [{}] fs: step 5", short(5));
    let at = said.find(&answer).unwrap_or_else(|| panic!("{said}"));
    assert!(
        !html.contains("http-equiv=\"refresh\""),
        "a finished page stays"
    );
    assert!(at < said.find("Probes").unwrap(), "{said}");
    // Who to mail: the first bad commit's author, from its message's From.
    let author = "author of the first bad commit: Kernel Hacker <kh@example.org>";
    let by = said.find(author).unwrap_or_else(|| panic!("{said}"));
    assert!(at < by && by < said.find("Probes").unwrap(), "{said}");
    assert_eq!(
        view["commits"][4]["author"],
        "Kernel Hacker <kh@example.org>"
    );
    assert!(
        said.contains("will-it-scale.per_process_ops of open1 (process, nr_task 1): +"),
        "{said}"
    );
    // What was bisected.
    assert!(
        said.contains(&format!("range {}..{}", short(0), short(7))),
        "{said}"
    );
    assert!(
        said.contains("workload open1 (process, nr_task 1)"),
        "{said}"
    );
    assert!(
        said.contains("runs 3 boots a side, up to 12 while a probe's verdict is undecided"),
        "{said}"
    );
    assert!(said.contains("machine lab-1"), "{said}");
    // The probes, in order: the bad end first, built cold; each later one
    // builds its commit on the good end's kernel from the cache.
    let probes = view["probes"].as_array().unwrap();
    assert!(probes.len() >= 3, "{view:#}");
    for (i, p) in probes.iter().enumerate() {
        let k = p["position"].as_u64().unwrap() as usize;
        let line = row(&html, &format!("/comparisons/{}", p["comparison_id"]));
        assert!(
            line.starts_with(&format!("{k}/7 {} fs: step {k} done", short(k))),
            "{line}"
        );
        assert!(line.contains("improvement") == (k >= 5), "{line}");
        assert!(line.contains("3 a side"), "{line}");
        let kernels = if i == 0 {
            "good end and commit built"
        } else {
            "commit built, good end from the cache"
        };
        assert!(line.ends_with(kernels), "{line}");
        if k == 7 {
            // The ends' check: not judged, the search not begun.
            assert!(line.contains("I improvement +"), "{line}");
            assert!(line.contains("% 3 a side"), "{line}");
            continue;
        }
        let judged = if k >= 5 { "bad" } else { "good" };
        assert!(line.contains(&format!("% {judged} ")), "{line}");
    }
    assert!(html.contains("class=\"verdict-improvement\""), "{html}");
    assert!(
        html.contains("<td class=\"verdict\">I improvement</td>"),
        "{html}"
    );
    // The search narrowed to commit 5.
    assert!(said.contains(" bad 5 3 a side"), "{said}");
    // The series: every commit, the probed ones linked, the answer marked.
    for k in 1..=7 {
        assert!(
            said.contains(&format!("{} fs: step {k}", short(k))),
            "{said}"
        );
    }
    assert!(
        said.contains(&format!(
            "{} fs: step 5 · probed: bad · the answer, by Kernel Hacker <kh@example.org>",
            short(5)
        )),
        "{said}"
    );

    // A probe's page names its bisection.
    let probe = probes[0]["comparison_id"].as_i64().unwrap();
    let html = page(&app, &format!("/comparisons/{probe}")).await;
    assert!(
        html.contains(&format!(
            "<a href=\"/bisections/{id}\">probe 7/7 of bisection {id}</a>"
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<h1>probe 7/7 of bisection {id}: “fs: step 7” against the good end</h1>"
        )),
        "{html}"
    );
    assert!(text(&html).contains(&format!("commit {}", short(7))));

    // The dashboard lists it beside the comparisons.
    let html = page(&app, "/").await;
    let line = row(&html, &format!("/bisections/{id}"));
    assert_eq!(
        line,
        format!(
            "{id} done will-it-scale.per_process_ops of open1 {}..{} {} {answer}",
            short(0),
            short(7),
            probes.len()
        )
    );

    // An unknown bisection is the error page.
    let a = app.get("/bisections/999").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert!(a.body.contains("<h1>404 Not Found</h1>"), "{}", a.body);
    assert!(a.body.contains("no bisection 999"), "{}", a.body);

    // And a browser shows the same.
    if let Some(chromium) = Chromium::find() {
        let server =
            patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
                .await;
        let dom = chromium
            .dump_dom(&format!("{}/bisections/{id}", server.url()))
            .await;
        assert!(text(&dom).contains(&answer), "{dom}");
        // On a phone too: the answer, the probes' table in its own box, and
        // a probe's page all within the screen's width.
        let urls = [format!("/bisections/{id}"), format!("/comparisons/{probe}")]
            .map(|p| format!("{}{p}", server.url()));
        assert_fit_a_phone(&chromium, &urls).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_running_bisection_page_says_how_far_it_has_come(pool: PgPool) {
    let (repo, ids) = linear(7);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let id = start(
        &app,
        request(repo.path().to_str().unwrap(), &ids[0], "master"),
    )
    .await;
    let short = |k: usize| ids[k][..10].to_string();
    // The ends first: 1 probe, then about ⌈log2 7⌉ = 3 more.
    let said = text(&page(&app, &format!("/bisections/{id}")).await);
    assert!(
        said.contains(&format!(
            "running: probe 1 of about 4: commit 7/7 [{}] fs: step 7 (queued)",
            short(7)
        )),
        "{said}"
    );
    assert!(said.contains("machine not claimed yet"), "{said}");
    assert!(
        said.contains("This page reloads every 30 seconds"),
        "{said}"
    );
    let lab = Lab {
        culprit: Some(5),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    let first = app.claim(m).await.unwrap();
    let said = text(&page(&app, &format!("/bisections/{id}")).await);
    assert!(said.contains("(running)"), "{said}");
    assert!(said.contains("not yet"), "no kernel reported yet: {said}");
    lab.run(&app, m, &first).await;
    // The rest of the ends' probe, then the search's first step.
    while let Some(job) = app.claim(m).await {
        lab.run(&app, m, &job).await;
    }
    bisection::advance_all(&app.state).await.unwrap();
    let html = page(&app, &format!("/bisections/{id}")).await;
    let said = text(&html);
    assert!(
        said.contains(&format!(
            "running: probe 2 of about 4: commit 4/7 [{}] fs: step 4 (queued)",
            short(4)
        )),
        "{said}"
    );
    let line = row(&html, "/comparisons/1");
    assert!(line.contains("done I improvement +"), "{line}");
    // The dashboard has no answer for it yet.
    let line = row(&page(&app, "/").await, &format!("/bisections/{id}"));
    assert!(line.starts_with(&format!("{id} running ")), "{line}");
    assert!(line.ends_with(" 2 —"), "{line}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_comparison_page_shows_its_short_commit_ids(pool: PgPool) {
    let (repo, ids) = linear(3);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap();
    let id = crate::bisections::range_comparison(&app, url, &ids[0]).await;
    let short = |k: usize| ids[k][..10].to_string();
    let html = page(&app, &format!("/comparisons/{id}")).await;
    let said = text(&html);
    assert!(
        said.contains(&format!("git range {}..{}", short(0), short(3))),
        "{said}"
    );
    assert!(said.contains(&format!("commit {}", short(3))), "{said}");
    let steps = app.comparison(id).await["steps"].clone();
    for (k, step) in steps.as_array().unwrap().iter().enumerate() {
        let k = k + 1;
        let line = row(&html, &format!("/comparisons/{}", step["comparison_id"]));
        assert!(
            line.starts_with(&format!("patch {k}/3 {} [PATCH] fs: step {k}", short(k))),
            "{line}"
        );
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_comparison_page_links_every_bisection_of_it(pool: PgPool) {
    let (repo, ids) = linear(4);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();
    let range = crate::bisections::range_comparison(&app, url, &ids[0]).await;
    let lab = Lab {
        culprit: Some(3),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    lab.drain(&app, m).await;
    let html = page(&app, &format!("/comparisons/{range}")).await;
    assert!(!html.contains("href=\"/bisections/"), "none yet: {html}");
    assert!(
        !html.contains("tracked tree"),
        "no tree asked for it: {html}"
    );

    // One started from the comparison, one over the same range by its
    // ends, and one over a shorter range, not this comparison's.
    let from = start(&app, json!({ "comparison": range, "workload": "open1" })).await;
    let ends = start(&app, request(url, &ids[0], &ids[4])).await;
    let other = start(&app, request(url, &ids[1], &ids[4])).await;
    lab.drain(&app, m).await;
    let html = page(&app, &format!("/comparisons/{range}")).await;
    let said = text(&html);
    let short = |k: usize| ids[k][..10].to_string();
    for id in [from, ends] {
        assert!(
            html.contains(&format!("href=\"/bisections/{id}\"")),
            "{html}"
        );
        assert!(
            said.contains(&format!(
                "bisection {id} of will-it-scale.per_process_ops of open1: \
                 first bad commit: [{}] fs: step 3",
                short(3)
            )),
            "{said}"
        );
    }
    assert!(
        !html.contains(&format!("href=\"/bisections/{other}\"")),
        "{html}"
    );
    // Before the reports: a reader sees them with the answer.
    let at = said.find(&format!("bisection {from} of")).unwrap();
    assert!(at < said.find("Boot order").unwrap(), "{said}");
}

/// `/bisections` lists every bisection, newest first, with its answer's
/// first line once it has one, and pages back by id; the menu leads there.
#[sqlx::test(migrations = "../migrations")]
async fn every_bisection_is_listed_on_its_own_page(pool: PgPool) {
    let (repo, ids) = linear(7);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();
    let found = start(&app, request(url, &ids[0], "master")).await;
    let lab = Lab {
        culprit: Some(5),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    drain_building(&lab, &app, m, &mut HashSet::new()).await;
    let running = start(&app, request(url, &ids[2], "master")).await;

    let html = page(&app, "/bisections").await;
    let said = text(&html);
    let (at_running, at_found) = (
        said.find(&format!(" {running} running ")),
        said.find(&format!(" {found} done ")),
    );
    assert!(
        at_running.is_some() && at_running < at_found,
        "newest first: {said}"
    );
    let line = row(&html, &format!("/bisections/{found}"));
    assert!(
        line.ends_with(&format!("first bad commit: [{}] fs: step 5", &ids[5][..10])),
        "{line}"
    );
    let older = text(&page(&app, &format!("/bisections?before={running}")).await);
    assert!(older.contains(&format!(" {found} done ")), "{older}");
    assert!(!older.contains(&format!(" {running} running ")), "{older}");
    assert!(older.contains("newest bisections"), "{older}");

    let Some(chromium) = Chromium::find() else {
        return;
    };
    let server =
        patchperf_testkit::TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap())
            .await;
    let dom = chromium.dump_dom(&format!("{}/", server.url())).await;
    assert!(
        dom.contains("<a href=\"/bisections\">bisections</a>"),
        "{dom}"
    );
    let dom = chromium
        .dump_dom(&format!("{}/bisections", server.url()))
        .await;
    assert!(text(&dom).contains(&format!(" {found} done ")), "{dom}");
    assert_fit_a_phone(&chromium, &[format!("{}/bisections", server.url())]).await;
    server.stop().await;
}
