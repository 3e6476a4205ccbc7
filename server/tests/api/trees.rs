//! Tracked trees over a real git repository, with the played lab of
//! bisections.rs (commit 2 and later make open1 50% faster): a tree is
//! added at its branch's head; each push queues the new commits as a range
//! comparison against the last tested head (one step per commit when
//! several); finished comparisons become one history point per commit;
//! the schedule defers a head that comes too soon; bad trees are refused;
//! the runner builds every head over the tree's anchor, the last head's
//! series being the new one's base, until the anchor moves up.

use axum::http::StatusCode;
use patchperf_common::mbox::prefix;
use patchperf_common::protocol::{BaseSource, JobSpec};
use patchperf_server::domain::tree;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::bisection_pages::{page, text};
use crate::bisections::{Lab, app};
use crate::git_repo::{commit_file, linear};
use crate::helpers::TestApp;

pub fn tree_request(url: &str, name: &str) -> Value {
    json!({
        "name": name,
        "url": url,
        "branch": "master",
        "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
        "runs": 3,
        "cc": ["linux-fsdevel@vger.kernel.org"],
    })
}

pub async fn add(app: &TestApp, body: Value) -> Value {
    let a = app.post("/api/v1/trees", &app.ci, body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    a.json["tree"].clone()
}

pub async fn push(app: &TestApp, id: i64) -> Value {
    let a = app
        .post(&format!("/api/v1/trees/{id}/push"), &app.ci, json!({}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json
}

/// A tree measured over four pushes of the played lab: commits 0 (its
/// head when added) to 4, commit 2 and later 50% faster, each comparison
/// drained; its history not written yet.
pub struct Measured {
    pub app: TestApp,
    pub repo: tempfile::TempDir,
    pub mirrors: tempfile::TempDir,
    pub machine: i64,
    /// The tree.
    pub id: i64,
    /// Commits 0 to 4.
    pub ids: Vec<String>,
    /// The comparison of each push.
    pub comparisons: Vec<i64>,
}

/// [`Measured`] over `pool`.
pub async fn measured_tree(pool: PgPool) -> Measured {
    let (repo, mut ids) = linear(0);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let machine = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap().to_string();
    let t = add(&app, tree_request(&url, "vfs.all")).await;
    let id = t["id"].as_i64().unwrap();
    assert_eq!(t["tested_commit"], ids[0].as_str());
    assert_eq!(push(&app, id).await["status"], "no new commit");

    let commit = |k: usize| {
        commit_file(
            repo.path(),
            &format!("fs/step{k}.c"),
            &format!("int step{k};\n"),
            &format!("fs: step {k}"),
        )
    };
    let lab = |ids: &[String]| Lab {
        culprit: Some(2),
        broken: Vec::new(),
        ids: ids.to_vec(),
    };
    // One commit a push, then two in one push.
    let mut comparisons = Vec::new();
    for pushed in [vec![1], vec![2], vec![3, 4]] {
        for k in &pushed {
            ids.push(commit(*k));
        }
        let answer = push(&app, id).await;
        let n = pushed.len();
        let queued = answer["comparison_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{answer}"));
        let plural = if n == 1 { "" } else { "s" };
        assert_eq!(
            answer["status"],
            format!("queued comparison {queued} of {n} new commit{plural}")
        );
        assert_eq!(answer["head"], ids.last().unwrap().as_str());
        comparisons.push(queued);
        lab(&ids).drain(&app, machine).await;
    }
    Measured {
        app,
        repo,
        mirrors,
        machine,
        id,
        ids,
        comparisons,
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn each_push_is_measured_and_every_commit_becomes_a_history_point(pool: PgPool) {
    let Measured {
        app,
        ids,
        id,
        comparisons,
        repo: _repo,
        mirrors: _mirrors,
        ..
    } = measured_tree(pool).await;
    let view = app.comparison(comparisons[2]).await;
    assert_eq!(view["git_range"], format!("{}..{}", ids[2], ids[4]));
    assert_eq!(view["steps"].as_array().unwrap().len(), 2);

    assert_eq!(tree::record_history(&app.state).await.unwrap(), 3);
    assert_eq!(
        tree::record_history(&app.state).await.unwrap(),
        0,
        "written once"
    );
    let a = app.get(&format!("/api/v1/trees/{id}/history")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let h = &a.json;
    assert_eq!(h["metric"], "will-it-scale.per_process_ops");
    assert_eq!(
        (h["workload"].as_str(), h["machine"].as_str()),
        (Some("open1"), Some("lab-1"))
    );
    let points = h["points"].as_array().unwrap();
    let commits: Vec<&str> = points
        .iter()
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(commits, expected, "one point per tested commit, in order");
    for (k, p) in points.iter().enumerate() {
        assert_eq!(p["position"], k);
        assert_eq!(p["runs"].as_array().unwrap().len(), 3, "{p}");
        let mean = p["mean"].as_f64().unwrap();
        let level = if k >= 2 { 1500.0 } else { 1000.0 };
        assert!((mean / level - 1.0).abs() < 0.01, "commit {k}: {mean}");
        assert!(p["low"].as_f64().unwrap() <= mean && mean <= p["high"].as_f64().unwrap());
    }
    assert_eq!(points[3]["subject"], "fs: step 3");
    assert_eq!(points[3]["author"], "Kernel Hacker <kh@example.org>");
    // Steps are the range's; the range itself is listed.
    assert_eq!(
        points[3]["comparison_id"],
        view["steps"][0]["comparison_id"]
    );

    // The level shift at commit 2 is found once, as an improvement.
    let a = app.get(&format!("/api/v1/changes?tree={id}")).await;
    let changes = a.json["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{a:?}");
    let c = &changes[0];
    assert_eq!(c["commit_sha"], ids[2].as_str());
    assert_eq!(
        (c["position"].as_i64(), c["from_position"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(c["verdict"], "improvement");
    assert_eq!(c["subject"], "fs: step 2");
    assert_eq!(c["state"], "open");
    assert_eq!(c["comparison_id"], comparisons[1]);
    let change = c["change_percent"].as_f64().unwrap();
    assert!((change - 50.0).abs() < 1.0, "{change}");
    assert!(c["low"].as_f64().unwrap() < change && change < c["high"].as_f64().unwrap());
    assert!(
        c["bisection_id"].is_null(),
        "one commit between the levels: nothing to bisect"
    );

    // Marked expected by an admin, it leaves the open list.
    let change_id = c["id"].as_i64().unwrap();
    let path = format!("/api/v1/changes/{change_id}/acknowledge");
    let body = json!({ "state": "expected", "note": "step 2 is the fast path" });
    let a = app.post(&path, &app.ci, body.clone()).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let a = app
        .post(&path, &app.admin, json!({ "state": "fixed" }))
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    let a = app.post(&path, &app.admin, body).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let a = app.get("/api/v1/changes?state=open").await;
    assert_eq!(a.json["changes"].as_array().unwrap().len(), 0);
    let a = app.get("/api/v1/changes?state=expected").await;
    assert_eq!(a.json["changes"][0]["note"], "step 2 is the fast path");
    // Who marked it (the admin token's name) and when.
    assert_eq!(a.json["changes"][0]["acknowledged_by"], "operator");
    let at = a.json["changes"][0]["acknowledged_at"].as_str().unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(at).unwrap();
    assert!((chrono::Utc::now() - at.to_utc()).num_seconds().abs() < 600);

    // A query that names no history lists the ones there are.
    let a = app
        .get(&format!("/api/v1/trees/{id}/history?workload=dup1"))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().contains("workload=open1&mode=process&nr_task=1"),
        "{a:?}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_head_that_comes_too_soon_waits_and_bad_trees_are_refused(pool: PgPool) {
    let (repo, _) = linear(1);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap().to_string();
    let mut body = tree_request(&url, "hourly");
    body["min_hours"] = json!(6);
    let id = add(&app, body).await["id"].as_i64().unwrap();
    commit_file(repo.path(), "fs/a.c", "int a;\n", "fs: a");
    assert!(push(&app, id).await["comparison_id"].is_i64());
    commit_file(repo.path(), "fs/b.c", "int b;\n", "fs: b");
    let answer = push(&app, id).await;
    assert!(answer["comparison_id"].is_null(), "{answer}");
    assert!(
        answer["status"]
            .as_str()
            .unwrap()
            .starts_with("new head waits: at most one test every 6 hours"),
        "{answer}"
    );

    let refused = |body: Value, status: StatusCode| {
        let app = &app;
        async move {
            let a = app.post("/api/v1/trees", &app.ci, body).await;
            assert_eq!(a.status, status, "{a:?}");
            a.error().to_string()
        }
    };
    let taken = refused(tree_request(&url, "hourly"), StatusCode::CONFLICT).await;
    assert!(
        taken.contains("a tree named `hourly` is tracked already"),
        "{taken}"
    );
    let mut body = tree_request(&url, "x");
    body["branch"] = json!("no-such-branch");
    let why = refused(body, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(why.contains("no-such-branch"), "{why}");
    let mut body = tree_request(&url, "x");
    body["cc"] = json!(["a@b.c\nBcc: all@lists"]);
    let why = refused(body, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(why.contains("is not a mail address"), "{why}");
    // An address literal would be dropped from the header later; one list
    // spelled twice would be mailed twice.
    let mut body = tree_request(&url, "x");
    body["cc"] = json!(["root@[127.0.0.1]"]);
    let why = refused(body, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(why.contains("is not a mail address"), "{why}");
    let mut body = tree_request(&url, "x");
    body["cc"] = json!(["list@example.org", "LIST@Example.org"]);
    let why = refused(body, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(why.contains("\"LIST@Example.org\" twice"), "{why}");
    let a = app
        .post("/api/v1/trees", &app.runner, tree_request(&url, "y"))
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let a = app.post("/api/v1/trees/99/push", &app.ci, json!({})).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let listed = app.get("/api/v1/trees").await;
    assert_eq!(listed.json["trees"].as_array().unwrap().len(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_webhook_url_is_shown_whole_only_to_ci_and_admin_tokens(pool: PgPool) {
    let (repo, _) = linear(0);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let mut body = tree_request(repo.path().to_str().unwrap(), "hooked");
    let secret = "https://ci:s3cret@hooks.example.org:8443/T0/B1?token=k3y";
    body["webhook_url"] = json!(secret);
    let id = add(&app, body).await["id"].as_i64().unwrap();
    let get = |path: String, token: Option<String>| {
        let app = &app;
        async move {
            let a = app
                .send(axum::http::Method::GET, &path, token.as_deref(), &[], None)
                .await;
            assert_eq!(a.status, StatusCode::OK, "{a:?}");
            a
        }
    };
    for token in [None, Some(app.runner.clone())] {
        let list = get("/api/v1/trees".into(), token.clone()).await;
        let one = get(format!("/api/v1/trees/{id}"), token).await;
        assert_eq!(
            list.json["trees"][0]["webhook_url"],
            "https://hooks.example.org:8443/…"
        );
        assert_eq!(one.json["webhook_url"], "https://hooks.example.org:8443/…");
        for a in [&list, &one] {
            assert!(
                !a.body.contains("s3cret") && !a.body.contains("k3y"),
                "{}",
                a.body
            );
        }
    }
    for token in [app.ci.clone(), app.admin.clone()] {
        let one = get(format!("/api/v1/trees/{id}"), Some(token)).await;
        assert_eq!(one.json["webhook_url"], secret);
    }
}

/// Calls the push hook of tree `id` and runs what it queued on `machine`
/// with the played lab (no commit faster); the comparison and its jobs.
async fn pushed(app: &TestApp, id: i64, machine: i64, ids: &[String]) -> (i64, Vec<JobSpec>) {
    let queued = push(app, id).await["comparison_id"].as_i64().unwrap();
    let lab = Lab {
        culprit: None,
        broken: Vec::new(),
        ids: ids.to_vec(),
    };
    (queued, lab.drain(app, machine).await)
}

/// The jobs of comparison `id` among `jobs`, all alike in what they build:
/// (base commit, base series, series).
fn built(jobs: &[JobSpec], id: i64) -> (String, String, String) {
    let mine: Vec<&JobSpec> = jobs.iter().filter(|j| j.comparison_id == id).collect();
    assert!(!mine.is_empty(), "no job of comparison {id}");
    let BaseSource::Git { commit, .. } = &mine[0].base else {
        panic!("{:?}", mine[0].base)
    };
    for j in &mine {
        assert_eq!((&j.base_mbox, &j.mbox), (&mine[0].base_mbox, &mine[0].mbox));
    }
    (
        commit.clone(),
        mine[0].base_mbox.clone(),
        mine[0].mbox.clone(),
    )
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_is_built_over_its_anchor_until_the_anchor_moves_up(pool: PgPool) {
    let (repo, mut ids) = linear(0);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let machine = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap().to_string();
    let id = add(&app, tree_request(&url, "vfs.all")).await["id"]
        .as_i64()
        .unwrap();
    let mut next = 1;
    let mut push_commits = |n: usize, ids: &mut Vec<String>| {
        for _ in 0..n {
            ids.push(commit_file(
                repo.path(),
                &format!("fs/step{next}.c"),
                &format!("int step{next};\n"),
                &format!("fs: step {next}"),
            ));
            next += 1;
        }
    };
    // The first head: a plain range over the head the tree was added at.
    push_commits(1, &mut ids);
    let (first, jobs) = pushed(&app, id, machine, &ids).await;
    let (over, base, patched) = built(&jobs, first);
    assert_eq!((over.as_str(), base.as_str()), (ids[0].as_str(), ""));
    assert_eq!(prefix::count(&patched), 1);

    // The next: over the same commit, its base side the last one's
    // patched side to the byte (the runner's cache key), one more commit
    // on the patched side.
    push_commits(1, &mut ids);
    let (second, jobs) = pushed(&app, id, machine, &ids).await;
    let (over, base, now) = built(&jobs, second);
    assert_eq!(over, ids[0]);
    assert_eq!(base, patched);
    assert!(now.starts_with(&patched) && prefix::count(&now) == 2);
    // What the comparison is about is still the new commit on the last
    // head.
    let view = app.comparison(second).await;
    assert_eq!(view["git_range"], format!("{}..{}", ids[1], ids[2]));
    assert_eq!(view["base"]["commit"], ids[1].as_str());
    let said = text(&page(&app, &format!("/comparisons/{second}")).await);
    let over = format!(
        "both kernels built over {} with the tree's 1 commit since as patches",
        &ids[0][..10]
    );
    assert!(said.contains(&over), "{said}");
    let patched = now;

    // Two commits in one push: each step carries the same, and the whole
    // is step 1's base against the last step's patched side, booted by
    // the steps alone.
    push_commits(2, &mut ids);
    let (third, jobs) = pushed(&app, id, machine, &ids).await;
    assert!(jobs.iter().all(|j| j.comparison_id != third), "{jobs:?}");
    let steps = app.comparison(third).await["steps"].clone();
    let step = |k: usize| steps[k]["comparison_id"].as_i64().unwrap();
    let (over, base, step_1) = built(&jobs, step(0));
    assert_eq!((over.as_str(), &base), (ids[0].as_str(), &patched));
    assert_eq!(prefix::count(&step_1), 3);
    let (_, base, step_2) = built(&jobs, step(1));
    assert_eq!(prefix::count(&base), 3);
    assert_eq!(prefix::count(&step_2), 4, "the last step is the whole");
    assert_eq!(app.comparison(third).await["status"], "done");

    // Past tree::MAX_CARRIED commits the anchor moves up to the last head.
    push_commits(tree::MAX_CARRIED, &mut ids);
    let (_, jobs) = pushed(&app, id, machine, &ids).await;
    assert!(jobs.iter().all(|j| j.base == jobs[0].base));
    let carried_head = ids.len() - 1;
    push_commits(1, &mut ids);
    let (moved, jobs) = pushed(&app, id, machine, &ids).await;
    let (over, base, patched) = built(&jobs, moved);
    assert_eq!(
        (over.as_str(), base.as_str()),
        (ids[carried_head].as_str(), "")
    );
    assert_eq!(prefix::count(&patched), 1);
    push_commits(1, &mut ids);
    let (after, jobs) = pushed(&app, id, machine, &ids).await;
    let (over, base, _) = built(&jobs, after);
    assert_eq!(
        (over.as_str(), &base),
        (ids[carried_head].as_str(), &patched)
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_rewritten_branch_is_measured_from_the_merge_base_and_keeps_its_history(pool: PgPool) {
    let Measured {
        app,
        repo,
        mirrors: _mirrors,
        machine,
        id,
        ids,
        ..
    } = measured_tree(pool).await;
    assert_eq!(tree::record_history(&app.state).await.unwrap(), 3);
    // A forced push: commits 3 and 4 are replaced by another.
    crate::git_repo::git(repo.path(), &["reset", "-q", "--hard", &ids[2]]);
    let new_head = commit_file(repo.path(), "fs/other.c", "int other;\n", "fs: another way");
    let answer = push(&app, id).await;
    let status = answer["status"].as_str().unwrap();
    assert!(status.contains("the branch was rewritten at "), "{answer}");
    assert!(
        status.contains(&format!(
            "{} is no longer on it; {} is measured against the merge base {} (\"fs: step 2\")",
            &ids[4][..12],
            &new_head[..12],
            &ids[2][..12]
        )),
        "{answer}"
    );
    let comparison = answer["comparison_id"].as_i64().unwrap();
    let view = app.comparison(comparison).await;
    assert_eq!(view["git_range"], format!("{}..{new_head}", ids[2]));
    let t = app.get(&format!("/api/v1/trees/{id}")).await.json;
    assert_eq!(t["tested_commit"], new_head.as_str());
    assert!(
        t["rewrite_note"]
            .as_str()
            .unwrap()
            .contains("no longer on it"),
        "{t:#}"
    );
    let p = page(&app, &format!("/trees/{id}")).await;
    assert!(text(&p).contains("is no longer on it"), "{}", text(&p));

    // Commits 3 and 4 leave the history; 0 to 2 stay, the new head follows.
    let lab = Lab {
        culprit: None,
        broken: Vec::new(),
        ids: ids.clone(),
    };
    lab.drain(&app, machine).await;
    assert_eq!(tree::record_history(&app.state).await.unwrap(), 1);
    let h = app.get(&format!("/api/v1/trees/{id}/history")).await.json;
    let commits: Vec<&str> = h["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["commit"].as_str().unwrap())
        .collect();
    assert_eq!(commits, [&ids[0], &ids[1], &ids[2], &new_head]);
    // The next push moves on from the new head as before.
    let next = commit_file(repo.path(), "fs/more.c", "int more;\n", "fs: more");
    let answer = push(&app, id).await;
    assert!(
        !answer["status"].as_str().unwrap().contains("rewritten"),
        "{answer}"
    );
    let view = app
        .comparison(answer["comparison_id"].as_i64().unwrap())
        .await;
    assert_eq!(view["git_range"], format!("{new_head}..{next}"));
}

/// A tree that names no workloads measures each new head on the workloads
/// the workload map gives the files its commits change; a head whose
/// commits change only files no workload runs is not measured, and the
/// tree (its API view, its page) says why until a later head is.
#[sqlx::test(migrations = "../migrations")]
async fn a_tree_without_workloads_measures_each_head_on_the_map_s(pool: PgPool) {
    let (repo, _) = linear(0);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap().to_string();
    let mut body = tree_request(&url, "mapped");
    body["workloads"] = json!([]);
    let id = add(&app, body).await["id"].as_i64().unwrap();

    commit_file(repo.path(), "fs/ext4/inode.c", "int ext4;\n", "ext4: x");
    let answer = push(&app, id).await;
    assert!(answer["comparison_id"].is_null(), "{answer}");
    let why = "not measured: no workload exercises fs/ext4/inode.c";
    assert_eq!(answer["status"], format!("1 new commit {why}"), "{answer}");
    let view = app.get(&format!("/api/v1/trees/{id}")).await;
    assert_eq!(view.json["push_note"], why, "{:?}", view.json);
    let page = app.get(&format!("/trees/{id}")).await;
    assert!(page.body.contains(why), "{}", page.body);

    commit_file(repo.path(), "fs/pipe.c", "int pipe;\n", "pipe: y");
    let answer = push(&app, id).await;
    let comparison = answer["comparison_id"].as_i64().expect("queued");
    let queued = app.get(&format!("/api/v1/comparisons/{comparison}")).await;
    assert_eq!(
        queued.json["workloads"],
        json!(["pipe1"]),
        "{:?}",
        queued.json
    );
    // Built over the head that was not measured: its commit is carried.
    assert_eq!(
        queued.json["git_range"]
            .as_str()
            .unwrap()
            .split("..")
            .count(),
        2
    );
    let view = app.get(&format!("/api/v1/trees/{id}")).await;
    assert!(view.json.get("push_note").is_none(), "{:?}", view.json);
    let page = app.get(&format!("/trees/{id}")).await;
    assert!(page.body.contains("from the workload map"), "{}", page.body);
}
