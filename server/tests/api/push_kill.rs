//! A real server killed with SIGKILL while it queues a tracked tree's push
//! of 200 commits: whenever it dies, the push is either all there (its
//! range comparison with its steps, and the tree's new tested head) or not
//! at all, and the push after the restart queues it once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::server::{free_port, token};
use serde_json::json;
use sqlx::PgPool;

use crate::git_repo::{commit_file, git};

/// The test database's URL: the server's DATABASE_URL with `#[sqlx::test]`'s
/// database in its path.
fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").unwrap();
    let name = pool.connect_options().get_database().unwrap().to_string();
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

fn serve(url: &str, port: u16, mirrors: &Path) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--local-git",
        ])
        .args(["--no-auto-calibrate", "--git-dir"])
        .arg(mirrors)
        .env("DATABASE_URL", url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while ureq::get(&format!("http://127.0.0.1:{port}/healthz"))
        .call()
        .is_err()
    {
        assert!(started.elapsed() < Duration::from_secs(60), "no /healthz");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn post(port: u16, path: &str, token: &str, body: serde_json::Value) -> Option<serde_json::Value> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut answer = agent
        .post(&format!("http://127.0.0.1:{port}{path}"))
        .header("Authorization", &format!("Bearer {token}"))
        .send_json(body)
        .ok()?;
    answer.body_mut().read_json().ok()
}

/// (range comparisons of the tree, all its comparisons, its tested head).
async fn pushed(pool: &PgPool, tree: i64) -> (i64, i64, String) {
    let (ranges, all): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE parent_id IS NULL), count(*) FROM comparisons
         WHERE tree_id = $1 OR parent_id IN (SELECT id FROM comparisons WHERE tree_id = $1)",
    )
    .bind(tree)
    .fetch_one(pool)
    .await
    .unwrap();
    let tested: String = sqlx::query_scalar("SELECT tested_commit FROM trees WHERE id = $1")
        .bind(tree)
        .fetch_one(pool)
        .await
        .unwrap();
    (ranges, all, tested)
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_push_killed_halfway_is_queued_once(pool: PgPool) {
    let url = database_url(&pool);
    let ci = token(&pool, TokenKind::Ci).await;
    let repo = tempfile::tempdir().unwrap();
    let mirrors = tempfile::tempdir().unwrap();
    let r = repo.path();
    git(r, &["init", "-q", "-b", "master"]);
    let base = commit_file(r, "fs/open.c", "int open;\n", "base");

    let port = free_port();
    let mut server = serve(&url, port, mirrors.path());
    let added = post(
        port,
        "/api/v1/trees",
        &ci,
        json!({
            "name": "vfs.all", "url": r.to_str().unwrap(), "branch": "master",
            "workloads": ["open1"], "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 }, "runs": 3,
        }),
    )
    .unwrap();
    let tree = added["tree"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{added}"));
    let mut head = base.clone();
    for k in 1..=200 {
        head = commit_file(
            r,
            &format!("fs/step{k}.c"),
            &format!("int step{k};\n"),
            &format!("fs: step {k}"),
        );
    }

    // Kill it ever later into the push, until a push got through.
    for delay_ms in [20, 60, 150, 300, 600, 1000, 1600, 2500, 4000, 8000] {
        let push = std::thread::spawn({
            let ci = ci.clone();
            move || post(port, &format!("/api/v1/trees/{tree}/push"), &ci, json!({}))
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        server.kill().unwrap();
        server.wait().unwrap();
        let _ = push.join();
        let (ranges, all, tested) = pushed(&pool, tree).await;
        server = serve(&url, port, mirrors.path());
        match ranges {
            0 => assert_eq!(
                tested, base,
                "killed after {delay_ms} ms: a head without its comparison"
            ),
            1 => {
                assert_eq!(
                    tested, head,
                    "killed after {delay_ms} ms: a comparison without its head"
                );
                assert_eq!(all, 201, "the range and its 200 steps, once");
                break;
            }
            n => panic!("killed after {delay_ms} ms: {n} range comparisons of one push"),
        }
    }
    // However far it got, the push after the restart queues it once.
    let last = post(port, &format!("/api/v1/trees/{tree}/push"), &ci, json!({})).unwrap();
    assert!(last["status"].is_string(), "{last}");
    let again = post(port, &format!("/api/v1/trees/{tree}/push"), &ci, json!({})).unwrap();
    assert_eq!(again["status"], "no new commit", "{again}");
    assert_eq!(pushed(&pool, tree).await, (1, 201, head));
    server.kill().unwrap();
    server.wait().unwrap();
}
