//! Issue 15 for real: a tracked tree followed as a maintainer's branch
//! moves. The branch is testkit's linux history (Debian's linux-source-6.1,
//! seed 002, then a comment change, seed 003, a comment change, seed 004
//! and a comment change), served from the kernel tests' shared repository,
//! whose branch `vfs.all` the test moves one commit at a time, calling the
//! push hook after each. A runner measures each new head under tcg-icount; the server writes the
//! history, finds the change points and mails the authors through a real
//! SMTP server (aiosmtpd).
//!
//! Shares the kernel tests' cache and takes turns with them
//! (`kernel_support`).

mod kernel_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use patchperf_common::protocol::FinishRequest;
use patchperf_server::domain::jobs::kernel_builds::{self, Origin};
use patchperf_server::domain::tokens::TokenKind;
use patchperf_server::{AppState, Config};
use patchperf_testkit::git_fixture::{self, LinuxHistory, Step};
use patchperf_testkit::smtp::{Relay, header};
use patchperf_testkit::{TestServer, free_port, token};
use serde_json::{Value, json};

use kernel_support::{
    assert_no_leftovers, exclusive, get_json, history_or_skip, load, run_agent_until_idle,
    skip_without_tools,
};

/// The workloads the tree measures: what seeds 003 and 004 move.
const WORKLOADS: [&str; 2] = ["fstatat-empty", "dup1"];

/// A comment appended to a file every kernel compiles: a commit that
/// changes no code.
fn harmless(n: usize) -> Step {
    Step::Append {
        path: "fs/read_write.c".into(),
        text: format!("/* patchperf test history: harmless change {n} */\n"),
        subject: format!("fs: comment {n}, a change that changes no code"),
    }
}

/// The branch's commits after the tarball: the head the tree is added at
/// (seed 002), then the five pushed one at a time.
fn history() -> Option<LinuxHistory> {
    let steps = [
        Step::seed("002"),
        harmless(1),
        Step::seed("003"),
        harmless(2),
        Step::seed("004"),
        harmless(3),
    ];
    history_or_skip(git_fixture::linux_history(&steps))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The maintainer's branch: `vfs.all` of the kernel tests' shared
/// repository, which the test moves. Its URL and path are the same every
/// run, so the runner's mirror and base checkout of it stay in the cache.
struct Remote {
    history: LinuxHistory,
}

impl Remote {
    const BRANCH: &str = "vfs.all";

    fn of(history: &LinuxHistory) -> Remote {
        Remote {
            history: history.clone(),
        }
    }

    /// A push of `sha` to the branch.
    fn push(&self, sha: &str) {
        self.history.push(Self::BRANCH, sha);
    }

    fn url(&self) -> String {
        self.history.url()
    }

    /// `Name <address>` of the author of `sha`.
    fn author(&self, sha: &str) -> String {
        git(&self.history.dir, &["log", "-1", "--format=%an <%ae>", sha])
    }
}

fn post(server: &str, token: &str, path: &str, body: &Value) -> Value {
    ureq::post(&format!("{server}{path}"))
        .header("authorization", &format!("Bearer {token}"))
        .send_json(body)
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap()
}

/// `GET <path>` as JSON, or null while the server answers with an error
/// (a history not written yet is a 400 naming the histories there are).
fn try_get_json(server: &str, token: &str, path: &str) -> Value {
    ureq::get(&format!("{server}{path}"))
        .header("authorization", &format!("Bearer {token}"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_json().ok())
        .unwrap_or(Value::Null)
}

/// [`get_json`] off the runtime the server answers on (a blocking call on
/// it would leave the server no thread to answer with).
async fn get(server: &str, token: &str, path: &str) -> Value {
    let (server, token, path) = (server.to_string(), token.to_string(), path.to_string());
    tokio::task::spawn_blocking(move || get_json(&server, &token, &path))
        .await
        .unwrap()
}

/// Waits (up to `limit`) until `ready` says the value `read` returns is
/// what the test waits for; that value.
fn wait_for(
    limit: Duration,
    mut read: impl FnMut() -> Value,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let v = read();
        if ready(&v) || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tracked_tree_finds_seed_003_and_seed_004_and_mails_their_authors(pool: sqlx::PgPool) {
    skip_without_tools!();
    let Some(history) = history() else { return };
    let mail_dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), mail_dir.path());
    let mirrors = tempfile::tempdir().unwrap();
    let config = Config {
        local_git: true,
        git_dir: mirrors.path().to_path_buf(),
        public_url: Some("https://perf.example.org/".into()),
        smtp_url: Some(format!("smtp://127.0.0.1:{}", relay.port)),
        mail_from: Some("patchperf <perf@example.org>".into()),
        outbox_retry: Duration::ZERO,
        ..Config::default()
    };
    let server = TestServer::serve(
        AppState::new(pool.clone(), config),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await;
    let (runner, ci) = (
        token(&pool, TokenKind::Runner).await,
        token(&pool, TokenKind::Ci).await,
    );
    let remote = Remote::of(&history);
    let commits: Vec<String> = history.commits.iter().map(|c| c.sha.clone()).collect();
    let url = server.url();

    let (tree, comparisons, remote) = {
        let (url, ci, runner, commits) = (url.clone(), ci.clone(), runner.clone(), commits.clone());
        tokio::task::spawn_blocking(move || {
            let _exclusive = exclusive();
            remote.push(&commits[0]);
            let started = Instant::now();
            let added = post(
                &url,
                &ci,
                "/api/v1/trees",
                &json!({
                    "name": "vfs.all",
                    "url": remote.url(),
                    "branch": Remote::BRANCH,
                    "workloads": WORKLOADS,
                    "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
                    "runs": 3,
                    "backend": "tcg-icount",
                    "cc": ["linux-fsdevel@vger.kernel.org"],
                }),
            );
            let tree = added["tree"]["id"].as_i64().unwrap();
            assert_eq!(added["tree"]["tested_commit"], commits[0].as_str());
            eprintln!(
                "tree added (the server cloned the branch) in {:.0} s, load {}",
                started.elapsed().as_secs_f64(),
                load()
            );
            let mut comparisons = Vec::new();
            for (k, sha) in commits.iter().enumerate().skip(1) {
                let started = Instant::now();
                remote.push(sha);
                let answer = post(&url, &ci, &format!("/api/v1/trees/{tree}/push"), &json!({}));
                assert_eq!(answer["head"], sha.as_str(), "{answer}");
                let id = answer["comparison_id"]
                    .as_i64()
                    .unwrap_or_else(|| panic!("push {k}: {answer}"));
                comparisons.push(id);
                let finishes = run_agent_until_idle(&url, &runner, "history-test");
                for f in &finishes {
                    assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
                }
                // The watcher writes the history of finished comparisons.
                let path = format!("/api/v1/trees/{tree}/history?workload=dup1");
                let points = wait_for(
                    Duration::from_secs(90),
                    || try_get_json(&url, &ci, &path),
                    |h| h["points"].as_array().is_some_and(|p| p.len() == k + 1),
                );
                assert_eq!(
                    points["points"].as_array().unwrap().len(),
                    k + 1,
                    "{points:#}"
                );
                eprintln!(
                    "push {k} ({}): comparison {id}, {} jobs, {:.0} s, load {}",
                    &sha[..12],
                    finishes.len(),
                    started.elapsed().as_secs_f64(),
                    load()
                );
            }
            assert_no_leftovers();
            (tree, comparisons, remote)
        })
        .await
        .unwrap()
    };

    // No push after the first builds its base kernel: that is the last
    // push's patched kernel, from the runner's cache (the tree's commits
    // ride over its anchor). Each builds at most its patched one (none
    // when the test cache kept it from an earlier run).
    let builds = kernel_builds::of_comparisons(&pool, &comparisons)
        .await
        .unwrap();
    for (k, id) in comparisons.iter().enumerate() {
        eprintln!("push {}: kernels {:?}", k + 1, builds[id]);
        if k > 0 {
            assert_eq!(builds[id].base, Some(Origin::Cached), "push {}", k + 1);
        }
    }

    // Six points a history, one per commit, each from the comparison that
    // measured it under tcg-icount.
    for workload in WORKLOADS {
        let h = get(
            &url,
            &ci,
            &format!("/api/v1/trees/{tree}/history?workload={workload}"),
        )
        .await;
        assert_eq!(h["measurement"], "tcg-icount", "{h:#}");
        let points = h["points"].as_array().unwrap();
        let shas: Vec<&str> = points
            .iter()
            .map(|p| p["commit"].as_str().unwrap())
            .collect();
        assert_eq!(shas, commits.iter().map(String::as_str).collect::<Vec<_>>());
        for p in points {
            eprintln!(
                "{workload:<14} {} {:>14.1} {}",
                &p["commit"].as_str().unwrap()[..12],
                p["mean"].as_f64().unwrap(),
                p["subject"].as_str().unwrap()
            );
        }
        assert_eq!(points[0]["comparison_id"], comparisons[0]);
        for (k, p) in points.iter().enumerate().skip(1) {
            assert_eq!(p["comparison_id"], comparisons[k - 1]);
        }
    }

    // Two change points: seed 003 on fstatat-empty, seed 004 on dup1.
    let changes = get(&url, &ci, &format!("/api/v1/changes?tree={tree}")).await;
    let changes = changes["changes"].as_array().unwrap();
    for c in changes {
        eprintln!(
            "change point: {} at {} {:+.3}% [{}, {}] p {} {}",
            c["workload"],
            &c["commit_sha"].as_str().unwrap_or("?")[..12],
            c["change_percent"].as_f64().unwrap_or(f64::NAN),
            c["low"],
            c["high"],
            c["p"],
            c["verdict"]
        );
    }
    let mut found: Vec<(String, String, String)> = changes
        .iter()
        .map(|c| {
            (
                c["workload"].as_str().unwrap().to_string(),
                c["commit_sha"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    let (seed_003, seed_004) = (&commits[2], &commits[4]);
    assert_eq!(
        found,
        [
            (
                "dup1".to_string(),
                seed_004.clone(),
                "improvement".to_string()
            ),
            (
                "fstatat-empty".to_string(),
                seed_003.clone(),
                "improvement".to_string()
            ),
        ]
    );

    // The dashboard shows both, open.
    let page = format!("{url}/");
    let dashboard = tokio::task::spawn_blocking(move || {
        ureq::get(&page)
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        dashboard.matches("class=\"change-entry ").count(),
        2,
        "{dashboard}"
    );
    for sha in [seed_003, seed_004] {
        assert!(dashboard.contains(&sha[..10]), "{dashboard}");
    }

    // One mail per change to the author of its commit, Cc the list, with
    // the 0-day text report; nothing for the harmless commits.
    let authors = [remote.author(seed_003), remote.author(seed_004)];
    let deadline = Instant::now() + Duration::from_secs(60);
    while relay.mails().len() < 4 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mails = relay.mails();
    let mut to_authors = Vec::new();
    for (headers, body) in &mails {
        let rcpt = header(headers, "x-rcptto");
        eprintln!("mail to {rcpt}: {}", header(headers, "subject"));
        // Each is about seed 003's or seed 004's commit (the harmless one
        // before it is named only as the base it was measured against).
        let subject = header(headers, "subject");
        let about: Vec<&String> = commits
            .iter()
            .filter(|c| subject.contains(&c[..10]))
            .collect();
        assert!(
            about == [seed_003] || about == [seed_004],
            "a mail about {about:?}: {subject}"
        );
        if rcpt == "linux-fsdevel@vger.kernel.org" {
            continue;
        }
        to_authors.push(header(headers, "to").to_string());
        assert!(
            body.contains(seed_003.as_str()) != body.contains(seed_004.as_str()),
            "{body}"
        );
        assert!(
            body.contains("https://perf.example.org/comparisons/"),
            "{body}"
        );
        assert!(body.contains("will-it-scale.per_process_ops"), "{body}");
        assert_eq!(header(headers, "cc"), "linux-fsdevel@vger.kernel.org");
    }
    assert_eq!(
        mails.len(),
        4,
        "two changes, each to its author and the list"
    );
    for author in &authors {
        let address = author.rsplit_once('<').unwrap().1.trim_end_matches('>');
        assert!(
            to_authors.iter().any(|to| to.contains(address)),
            "no mail to {author}: {to_authors:?}"
        );
    }
    drop(relay);
    server.stop().await;
}
