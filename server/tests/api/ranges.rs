//! Git ranges: `range: "A..B"` over a git base at A. A real repository made
//! here (a merge, an empty commit, a side branch) is read by the server:
//! one step per first-parent commit with its commit id, the merge as one
//! step, the empty commit left out; the series the runner gets applies
//! with `git am` on A to exactly B's tree; bad ranges are refused with the
//! reason, and a server without `local_git` refuses paths.

use std::path::Path;

use axum::http::StatusCode;
use patchperf_server::Config;
use serde_json::json;
use sqlx::PgPool;

use crate::git_repo::{commit_file, git};
use crate::helpers::{TestApp, test_config};

/// The repository's commits by name.
struct Repo {
    dir: tempfile::TempDir,
    base: String,
    first: String,
    side: String,
    merge: String,
    empty: String,
    last: String,
}

/// base — fs: first — Merge branch 'side' (side: fs: side) — empty — fs: last
fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "master"]);
    let base = commit_file(d, "fs/open.c", "int open;\n", "base");
    let first = commit_file(d, "fs/open.c", "int open = 1;\n", "fs: first");
    git(d, &["checkout", "-q", "-b", "side"]);
    let side = commit_file(d, "fs/side.c", "int side;\n", "fs: side");
    git(d, &["checkout", "-q", "master"]);
    git(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge branch 'side'",
            "side",
        ],
    );
    let merge = git(d, &["rev-parse", "HEAD"]);
    git(d, &["commit", "-q", "--allow-empty", "-m", "nothing"]);
    let empty = git(d, &["rev-parse", "HEAD"]);
    let last = commit_file(d, "fs/file.c", "int fd;\n", "fs: last");
    Repo {
        dir,
        base,
        first,
        side,
        merge,
        empty,
        last,
    }
}

async fn app(pool: PgPool, mirrors: &Path) -> TestApp {
    TestApp::with_config(
        pool,
        Config {
            local_git: true,
            git_dir: mirrors.to_path_buf(),
            ..test_config()
        },
    )
    .await
}

fn body(url: &str, from: &str, range: &str) -> serde_json::Value {
    json!({
        "base": { "kind": "git", "url": url, "commit": from },
        "range": range,
        "mbox": "",
        "order_seed": 5,
    })
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_becomes_one_step_per_first_parent_commit(pool: PgPool) {
    let repo = repo();
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.dir.path().to_str().unwrap().to_string();
    // Ends by branch and abbreviated id, as people write them.
    let spelled = format!("{}..master", &repo.base[..12]);
    let id = app.submit(3, body(&url, &repo.base[..12], &spelled)).await;
    let view = app.comparison(id).await;

    assert_eq!(view["git_range"], format!("{}..{}", repo.base, repo.last));
    assert_eq!(view["commit"], repo.last.as_str());
    // The base is A, pinned to its full id so a moved branch changes nothing.
    assert_eq!(view["base"]["commit"], repo.base.as_str());
    let steps = view["steps"].as_array().unwrap();
    let seen: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s["commit"].as_str().unwrap(),
                s["subject"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (repo.first.as_str(), "[PATCH] fs: first"),
            (repo.merge.as_str(), "[PATCH] Merge branch 'side'"),
            (repo.last.as_str(), "[PATCH] fs: last"),
        ],
        "the empty commit {} and the side branch's {} are no steps",
        repo.empty,
        repo.side
    );

    // What a runner gets for the merge's step: A plus the first commit
    // against A plus the first two; the whole range applies to B's tree.
    let machine = app.register("lab-1").await;
    let mut specs = Vec::new();
    while let Some(job) = app.claim(machine).await {
        app.upload_all(machine, &job).await;
        app.finish_done(machine, &job).await;
        specs.push(job);
    }
    let merge_step = steps[1]["comparison_id"].as_i64().unwrap();
    let spec = specs
        .iter()
        .find(|s| s.comparison_id == merge_step)
        .unwrap();
    assert!(spec.base_mbox.contains("fs: first"));
    assert!(!spec.base_mbox.contains("side.c"));
    assert!(spec.mbox.contains("diff --git a/fs/side.c b/fs/side.c"));
    // 0-day's `commit:` line names the step's commit.
    let text = app
        .get(&format!("/api/v1/comparisons/{merge_step}/report.txt"))
        .await;
    assert!(
        text.body.contains(&format!("commit: {}", repo.merge)),
        "{}",
        text.body
    );
    // The step's page names it by its commit and subject, measured
    // against its parent; the JSON's step_of carries the commit.
    let page = app.get(&format!("/comparisons/{merge_step}")).await;
    assert!(
        page.body.contains(&format!(
            "<h1>{} “Merge branch &#x27;side&#x27;” against its parent (commit 2/3)</h1>",
            &repo.merge[..10]
        )) || page.body.contains(&format!(
            "<h1>{} “Merge branch &#39;side&#39;” against its parent (commit 2/3)</h1>",
            &repo.merge[..10]
        )),
        "{}",
        page.body
    );
    let json = app.get(&format!("/api/v1/comparisons/{merge_step}")).await;
    assert_eq!(json.json["step_of"]["commit"], repo.merge.as_str());
    // The whole range is booted by its steps alone; the last one's
    // patched kernel is the range's end.
    assert!(specs.iter().all(|s| s.comparison_id != id));
    let last_step = steps[2]["comparison_id"].as_i64().unwrap();
    let whole = specs.iter().find(|s| s.comparison_id == last_step).unwrap();
    let check = tempfile::tempdir().unwrap();
    let c = check.path();
    git(c, &["clone", "-q", &url, "."]);
    git(c, &["checkout", "-q", &repo.base]);
    std::fs::write(c.join("range.mbox"), &whole.mbox).unwrap();
    git(c, &["am", "-q", "range.mbox"]);
    assert_eq!(
        git(c, &["rev-parse", "HEAD^{tree}"]),
        git(repo.dir.path(), &["rev-parse", "master^{tree}"])
    );
    assert_eq!(
        git(c, &["log", "-1", "--format=%an <%ae>"]),
        "Kernel Hacker <kh@example.org>"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn ranges_that_cannot_be_measured_are_refused_with_the_reason(pool: PgPool) {
    let repo = repo();
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool.clone(), mirrors.path()).await;
    let url = repo.dir.path().to_str().unwrap();
    let refused = |a: &crate::helpers::Answer| {
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
        a.error().to_string()
    };
    let range = |from: &str, to: &str| body(url, from, &format!("{from}..{to}"));

    let a = app.try_submit(range(&repo.side, "master")).await;
    assert!(
        refused(&a).contains("is not on the first-parent line"),
        "{a:?}"
    );
    let a = app.try_submit(range(&repo.last, "master")).await;
    assert!(refused(&a).contains("it has no commits"), "{a:?}");
    let a = app.try_submit(range(&repo.merge, &repo.empty)).await;
    assert!(
        refused(&a).contains("none of its commits changes a file"),
        "{a:?}"
    );
    let a = app.try_submit(range("v9.9", "master")).await;
    assert!(refused(&a).contains("`v9.9` names no commit"), "{a:?}");
    let a = app
        .try_submit(body(url, &repo.base, &format!("{}..master", repo.first)))
        .await;
    assert!(
        refused(&a).contains("the base of a range is its first end"),
        "{a:?}"
    );
    let a = app
        .try_submit(body("/nonexistent/linux.git", "v6.1", "v6.1..master"))
        .await;
    assert!(
        refused(&a).contains("cannot clone /nonexistent/linux.git"),
        "{a:?}"
    );
    assert_eq!(app.count("comparisons").await, 0);

    // A server that was not told to read its own disk refuses paths.
    let strict = TestApp::new(pool).await;
    let a = strict.try_submit(range(&repo.base, "master")).await;
    assert!(refused(&a).contains("is a path on the server"), "{a:?}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_new_commit_on_the_branch_is_fetched_into_the_mirror(pool: PgPool) {
    let repo = repo();
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.dir.path().to_str().unwrap();
    app.submit(
        3,
        body(url, &repo.merge, &format!("{}..master", repo.merge)),
    )
    .await;
    let newer = commit_file(repo.dir.path(), "fs/namei.c", "int walk;\n", "fs: newer");
    let id = app
        .submit(3, body(url, &repo.last, &format!("{}..master", repo.last)))
        .await;
    let view = app.comparison(id).await;
    assert_eq!(view["commit"], newer.as_str());
    assert!(
        view["steps"].as_array().is_none_or(Vec::is_empty),
        "one commit: no steps"
    );
    assert_eq!(
        view["patches"]["messages"][0]["subject"],
        "[PATCH] fs: newer"
    );
}
