//! Comparisons named as kernel people name them (issue 27), the same in
//! the listing (`/` and `GET /api/v1/comparisons`), on the page's heading
//! and in `report.txt`'s header: a series by its cover letter, or its
//! first patch and how many more; a git range as `A..B (3 commits)`; a
//! tracked tree's head as `vfs.all 87d7add1d7 ("subject")` (a push of
//! several commits as `vfs.all 1234567890..87d7add1d7 (2 commits)`), its
//! base as `vfs.all 1234567890ab`.

use serde_json::{Value, json};
use sqlx::PgPool;

use crate::browser::visible_text;
use crate::git_repo::{commit_file, git};
use crate::helpers::{TestApp, test_config};

/// Patch `n` of 3 of a `[PATCH v2 …]` series.
fn patch(n: u32) -> String {
    format!(
        "From 000000000000000000000000000000000000000{n} Mon Sep 17 00:00:00 2001\n\
         From: Kernel Hacker <kh@example.org>\n\
         Subject: [PATCH v2 {n}/3] fs: step {n}\n\
         Message-ID: <v2-{n}@example.org>\n\
         \n\
         ---\n\
         diff --git a/fs/f{n}.c b/fs/f{n}.c\n\
         --- a/fs/f{n}.c\n\
         +++ b/fs/f{n}.c\n\
         @@ -1,1 +1,1 @@\n\
         -old\n\
         +new\n\
         \n"
    )
}

const COVER: &str = "\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Kernel Hacker <kh@example.org>
Subject: [PATCH v2 0/3] fs: faster close
Message-ID: <v2-0@example.org>

Three steps to a faster close(2).

";

/// The listing's entry of comparison `id` (API) and its dashboard row's
/// text.
async fn listed(app: &TestApp, id: i64) -> (Value, String) {
    let list = app.get("/api/v1/comparisons").await;
    let entry = list.json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {}", list.body))
        .clone();
    let page = app.get("/").await.body;
    let row = page
        .split("<tr class=")
        .find(|r| r.contains(&format!("href=\"/comparisons/{id}\"")))
        .unwrap_or_else(|| panic!("{id} on {page}"));
    (entry, squash(&visible_text(row)))
}

/// The page's heading and text, and `report.txt`, once a machine has run
/// every job (the text report has a header once there are runs).
async fn shown(app: &TestApp, id: i64) -> (String, String, String) {
    let machine = app.register("lab-2").await;
    while let Some(job) = app.claim(machine).await {
        app.upload_all(machine, &job).await;
        app.finish_done(machine, &job).await;
    }
    let page = app.get(&format!("/comparisons/{id}")).await.body;
    let h1 = page
        .split("<h1>")
        .nth(1)
        .and_then(|h| h.split("</h1>").next())
        .unwrap_or_default();
    let text = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await
        .body;
    (
        squash(&visible_text(h1)),
        squash(&visible_text(&page)),
        text,
    )
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[sqlx::test(migrations = "../migrations")]
async fn a_series_is_named_by_its_cover_letter(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let mbox = format!("{COVER}{}", (1..=3).map(patch).collect::<String>());
    let id = app
        .submit(3, json!({ "per_patch": true, "mbox": mbox }))
        .await;
    let cover = "[PATCH v2 0/3] fs: faster close";
    let (entry, row) = listed(&app, id).await;
    assert_eq!(entry["name"], cover, "{entry}");
    assert!(row.contains(cover), "{row}");
    assert!(!row.contains("step 1"), "{row}");
    let (h1, _, text) = shown(&app, id).await;
    assert_eq!(h1, cover);
    assert!(text.contains(&format!("\nseries: {cover}\n")), "{text}");
    // Its steps' table names each patch; the reports above it do not.
    let (reports, steps) = text.split_once("patch by patch: ").unwrap();
    assert!(!reports.contains("fs: step 1"), "{text}");
    assert!(steps.contains("fs: step 1"), "{text}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_series_without_a_cover_letter_is_its_first_patch_and_the_rest(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let mbox: String = (1..=3).map(patch).collect();
    let id = app.submit(3, json!({ "mbox": mbox })).await;
    let name = "[PATCH v2 1/3] fs: step 1 (+2 more patches)";
    let (entry, row) = listed(&app, id).await;
    assert_eq!(entry["name"], name, "{entry}");
    assert!(row.contains(name), "{row}");
    let (h1, _, text) = shown(&app, id).await;
    assert_eq!(h1, name);
    assert!(text.contains(&format!("\nseries: {name}\n")), "{text}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_is_named_by_its_ends_and_its_commits(pool: PgPool) {
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path();
    git(d, &["init", "-q", "-b", "master"]);
    let base = commit_file(d, "fs/open.c", "int open;\n", "base");
    for k in 1..=3 {
        commit_file(
            d,
            "fs/open.c",
            &format!("int open = {k};\n"),
            &format!("fs: commit {k}"),
        );
    }
    let last = git(d, &["rev-parse", "HEAD"]);
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(
        pool,
        patchperf_server::Config {
            local_git: true,
            git_dir: mirrors.path().to_path_buf(),
            ..test_config()
        },
    )
    .await;
    let url = d.to_str().unwrap();
    let id = app
        .submit(
            3,
            json!({
                "base": { "kind": "git", "url": url, "commit": base },
                "range": format!("{base}..master"),
                "mbox": "",
            }),
        )
        .await;
    let name = format!("{}..{} (3 commits)", &base[..10], &last[..10]);
    let (entry, row) = listed(&app, id).await;
    assert_eq!(entry["name"], name.as_str(), "{entry}");
    assert!(row.contains(&name), "{row}");
    assert!(
        !row.contains("commit 1"),
        "the first commit names it: {row}"
    );
    let (h1, _, text) = shown(&app, id).await;
    assert_eq!(h1, name);
    assert!(text.contains(&format!("\nrange: {name}\n")), "{text}");
    // Its steps' table names each patch; the reports above it do not.
    let (reports, steps) = text.split_once("patch by patch: ").unwrap();
    assert!(!reports.contains("fs: commit 1"), "{text}");
    assert!(steps.contains("fs: commit 1"), "{text}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_head_is_named_by_its_tree_commit_and_subject(pool: PgPool) {
    let m = crate::trees::measured_tree(pool).await;
    // A push of one commit is that commit: the second push, commit 2.
    let (entry, _) = listed(&m.app, m.comparisons[1]).await;
    let one = format!("vfs.all {} (\"fs: step 2\")", &m.ids[2][..10]);
    assert_eq!(entry["name"], one.as_str(), "{entry}");
    // The last push, commits 3 and 4 over commit 2, is its range: naming
    // it by one commit would blame that one for both.
    let id = m.comparisons[2];
    let name = format!(
        "vfs.all {}..{} (2 commits)",
        &m.ids[2][..10],
        &m.ids[4][..10]
    );
    let base = format!("vfs.all {}", &m.ids[2][..12]);
    let (entry, row) = listed(&m.app, id).await;
    assert_eq!(entry["name"], name.as_str(), "{entry}");
    assert!(row.contains(&name), "{row}");
    assert!(!row.contains("[PATCH]"), "{row}");
    let (h1, page, text) = shown(&m.app, id).await;
    assert_eq!(h1, name);
    assert!(page.contains(&format!("base {base} ")), "{page}");
    assert!(!page.contains(&m.ids[2]), "no 40-hex base: {page}");
    let repo = m.repo.path().to_str().unwrap();
    assert!(!page.contains(&format!("{repo}@")), "no local path: {page}");
    assert!(text.contains(&format!("\ntree: {name}\n")), "{text}");
    assert!(text.contains(&format!("\nbase: {base}\n")), "{text}");
    assert!(
        text.contains(&format!("commit: {} (\"fs: step 4\")", m.ids[4])),
        "{text}"
    );
}
