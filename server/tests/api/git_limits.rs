//! The server's git against hostile repositories and remotes, with real
//! git: output over its cap is refused at once, saying what was too big (a
//! 20 MB blob in a range, a 300 KB subject at a tree's head); a git
//! command's whole process group ends with its request (a client that
//! disconnects) and with its server (SIGTERM); git work beyond its slots
//! answers 503 with `Retry-After`, and a remote that accepts and never
//! answers is given up after the stall limit. The mirrors themselves:
//! `git_mirrors.rs`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use patchperf_server::Config;
use patchperf_server::http::auth::TokenKind;
use patchperf_testkit::{TestServer, database_url, free_port};
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

use crate::git_mirrors::mirrors_in;
use crate::git_repo::{commit_as, linear, noise};
use crate::helpers::{TestApp, test_config};

/// Local repositories allowed, mirrors under `mirrors`; a git command that
/// hangs past a minute fails (the old cap waited for it).
pub fn config(mirrors: &Path) -> Config {
    Config {
        local_git: true,
        git_dir: mirrors.to_path_buf(),
        git_timeout: Duration::from_secs(60),
        ..test_config()
    }
}

/// A remote that hangs: a loopback listener that accepts connections,
/// holds them and never answers; it counts what it accepted.
pub struct Silent {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Silent {
    pub async fn start() -> Silent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Silent {
            port,
            accepted,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The git processes alive now whose command line names
/// `127.0.0.1:<port>/` (the clone and its `git remote-http` helper).
pub fn git_processes(port: u16) -> Vec<String> {
    let needle = format!("127.0.0.1:{port}/");
    let Ok(proc) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    proc.flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| {
            raw.split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|cmd| {
            let program = cmd.split(' ').next().unwrap_or("");
            cmd.contains(&needle)
                && program
                    .rsplit('/')
                    .next()
                    .is_some_and(|p| p.starts_with("git"))
        })
        .collect()
}

pub async fn wait_for(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn tree_request(url: &str, name: &str) -> Value {
    json!({
        "name": name, "url": url, "branch": "master", "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 }, "runs": 3,
    })
}

pub fn range_request(url: &str, from: &str, to: &str) -> Value {
    json!({
        "base": { "kind": "git", "url": url, "commit": from },
        "range": format!("{from}..{to}"),
        "mbox": "",
    })
}

/// POSTs `body` to `path` over a real connection and gives up after
/// `after` without an answer, closing the connection as a client that
/// times out does. Panics when an answer came first.
fn post_and_give_up(addr: SocketAddr, token: &str, path: &str, body: &str, after: Duration) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: patchperf\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s.set_read_timeout(Some(after)).unwrap();
    let mut buf = [0; 512];
    let got = s.read(&mut buf);
    assert!(
        got.is_err(),
        "answered: {:?}",
        got.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    );
}

/// POSTs `body` in-process: status, `Retry-After` and the error; panics
/// when no answer comes within a minute.
async fn post_with_headers(
    app: &TestApp,
    path: &str,
    body: &Value,
) -> (StatusCode, Option<String>, String) {
    tokio::time::timeout(Duration::from_secs(60), post_answer(app, path, body))
        .await
        .expect("no answer within 60 s")
}

async fn post_answer(
    app: &TestApp,
    path: &str,
    body: &Value,
) -> (StatusCode, Option<String>, String) {
    let req = Request::post(path)
        .header(header::AUTHORIZATION, format!("Bearer {}", app.ci))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = app.app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let retry = resp
        .headers()
        .get(header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (
        status,
        retry,
        json["error"].as_str().unwrap_or_default().to_string(),
    )
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_with_a_20_mb_blob_is_refused_at_once_saying_what_was_too_big(pool: PgPool) {
    let (repo, ids) = linear(0);
    let big = commit_as(
        repo.path(),
        "firmware/blob.bin",
        &noise(20 << 20),
        "firmware: add a blob\n",
        "Kernel Hacker",
        "kh@example.org",
    );
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(mirrors.path())).await;
    let url = repo.path().to_str().unwrap();
    let a = app.try_submit(range_request(url, &ids[0], "master")).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{a:?}");
    let e = a.error();
    assert!(
        e.contains(&format!("commit {big}'s diff against its first parent"))
            && e.contains("is more than 16.0 MiB"),
        "{e}"
    );
    assert!(
        e.contains("its commits' patches may take 16 MiB together"),
        "{e}"
    );
    assert_eq!(app.count("comparisons").await, 0);
    assert!(
        mirrors_in(mirrors.path()).is_empty(),
        "the refused range's mirror is gone"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_tree_whose_head_subject_is_300_kb_is_refused_saying_so(pool: PgPool) {
    let (repo, _) = linear(0);
    let subject = format!("fs: {}\n", "x".repeat(300 << 10));
    let head = commit_as(
        repo.path(),
        "fs/long.c",
        b"int x;\n",
        &subject,
        "Kernel Hacker",
        "kh@example.org",
    );
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(mirrors.path())).await;
    let url = repo.path().to_str().unwrap();
    let a = app
        .post("/api/v1/trees", &app.ci, tree_request(url, "long"))
        .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{a:?}");
    assert!(
        a.error().contains(&format!(
            "what commit {head} says of itself (subject, author, date) is more than 64 KiB"
        )),
        "{}",
        a.error()
    );
    assert!(!a.error().contains("0 MiB"), "{}", a.error());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_git_command_ends_with_the_request_its_client_dropped(pool: PgPool) {
    let silent = Silent::start().await;
    let mirrors = tempfile::tempdir().unwrap();
    let config = Config {
        git_stall_timeout: Duration::from_secs(300),
        git_timeout: Duration::from_secs(600),
        ..config(mirrors.path())
    };
    let app = TestApp::with_config(pool, config).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = server.addr();
    let body = tree_request(&silent.url("linux.git"), "hangs").to_string();
    let token = app.ci.clone();
    let client = tokio::task::spawn_blocking(move || {
        post_and_give_up(addr, &token, "/api/v1/trees", &body, Duration::from_secs(3));
    });
    let port = silent.port;
    wait_for("git runs against the silent remote", 30, || {
        git_processes(port).len() >= 2
    })
    .await;
    let seen = git_processes(port);
    client.await.unwrap();
    wait_for(&format!("git outlived its request: {seen:?}"), 20, || {
        git_processes(port).is_empty()
    })
    .await;
    assert_eq!(app.state.git.usage().await.running, 0);
    server.stop().await;
}

#[sqlx::test(migrations = "../migrations")]
async fn no_git_command_outlives_its_server(pool: PgPool) {
    let silent = Silent::start().await;
    let mirrors = tempfile::tempdir().unwrap();
    let token = patchperf_testkit::token(&pool, TokenKind::Ci).await;
    let port = free_port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args([
            "--allow-private-destinations",
            "--git-stall-seconds",
            "300",
            "--git-dir",
        ])
        .arg(mirrors.path())
        .env("DATABASE_URL", database_url(&pool))
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_for("the server answers", 120, || {
        TcpStream::connect(addr).is_ok()
    })
    .await;
    let body = tree_request(&silent.url("linux.git"), "hangs").to_string();
    let client = tokio::task::spawn_blocking(move || {
        // Whatever it answers once the server stops: only that it ends.
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "POST /api/v1/trees HTTP/1.1\r\nHost: patchperf\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
    });
    let gport = silent.port;
    wait_for("git runs against the silent remote", 30, || {
        git_processes(gport).len() >= 2
    })
    .await;
    let seen = git_processes(gport);
    let term = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exited = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = server.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = server.kill();
                let _ = server.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert!(
        exited.is_some_and(|s| s.success()),
        "the server did not stop within 30 s: {exited:?}"
    );
    wait_for(&format!("git outlived its server: {seen:?}"), 10, || {
        git_processes(gport).is_empty()
    })
    .await;
    let answer = client.await.unwrap();
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
        "{answer}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn git_work_beyond_its_slots_is_answered_503_with_retry_after(pool: PgPool) {
    let (p, q, r) = (
        Silent::start().await,
        Silent::start().await,
        Silent::start().await,
    );
    let mirrors = tempfile::tempdir().unwrap();
    let config = Config {
        git_jobs: 2,
        git_jobs_per_remote: 1,
        git_stall_timeout: Duration::from_secs(300),
        git_timeout: Duration::from_secs(600),
        ..config(mirrors.path())
    };
    let app = Arc::new(TestApp::with_config(pool, config).await);
    let running = |app: &Arc<TestApp>| {
        let app = Arc::clone(app);
        async move { app.state.git.usage().await.running }
    };
    let hang = |url: String, name: &'static str| {
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            app.post("/api/v1/trees", &app.ci, tree_request(&url, name))
                .await
        })
    };
    let first = hang(p.url("a.git"), "a");
    let deadline = Instant::now() + Duration::from_secs(30);
    while running(&app).await < 1 {
        assert!(Instant::now() < deadline, "the first clone never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The same remote: its one slot is taken.
    let (status, retry, error) =
        post_with_headers(&app, "/api/v1/trees", &tree_request(&p.url("b.git"), "b")).await;
    assert_eq!(
        (status, retry.as_deref()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("30")),
        "{error}"
    );
    assert!(
        error.contains(&format!("every git slot for 127.0.0.1:{} is busy", p.port)),
        "{error}"
    );
    // Another remote takes the server's second slot; a third finds none.
    let second = hang(q.url("a.git"), "c");
    while running(&app).await < 2 {
        assert!(Instant::now() < deadline, "the second clone never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, retry, error) =
        post_with_headers(&app, "/api/v1/trees", &tree_request(&r.url("a.git"), "d")).await;
    assert_eq!(
        (status, retry.as_deref()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("30")),
        "{error}"
    );
    assert!(
        error.contains("every git slot of this server is busy"),
        "{error}"
    );
    assert_eq!(
        r.accepted.load(Ordering::SeqCst),
        0,
        "nothing connected to the third remote"
    );
    // Dropped requests give their slots and processes back.
    first.abort();
    second.abort();
    let _ = (first.await, second.await);
    let (pp, qp) = (p.port, q.port);
    wait_for("the aborted clones ended", 20, || {
        git_processes(pp).is_empty() && git_processes(qp).is_empty()
    })
    .await;
    assert_eq!(running(&app).await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_remote_that_never_answers_is_given_up_after_the_stall_limit(pool: PgPool) {
    let silent = Silent::start().await;
    let mirrors = tempfile::tempdir().unwrap();
    let config = Config {
        git_stall_timeout: Duration::from_secs(3),
        git_timeout: Duration::from_secs(600),
        ..config(mirrors.path())
    };
    let app = TestApp::with_config(pool, config).await;
    let url = silent.url("linux.git");
    let a = tokio::time::timeout(
        Duration::from_secs(120),
        app.post("/api/v1/trees", &app.ci, tree_request(&url, "hangs")),
    )
    .await
    .expect("the clone of a remote that never answers was not given up within 120 s");
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{a:?}");
    assert_eq!(
        a.error(),
        format!(
            "cannot clone {url}: it cannot be reached from this server (the server log says why)"
        )
    );
    assert!(git_processes(silent.port).is_empty());
}

/// A list whose archive answers too slowly (accepts, never sends enough
/// to finish, never quite stalls) holds its own read for
/// `list_read_timeout` at most, never the reader's other lists; its git is
/// killed, the list says why, and its push hook is answered 503 within a
/// tenth of the bound (issue 40: such a remote held requests 1800 s and
/// wedged the one reader of every list).
#[sqlx::test(migrations = "../migrations")]
async fn a_slow_archive_holds_only_its_own_list_and_not_for_long(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        list_read_timeout: Duration::from_secs(3),
        // Not the stall check: the drip never stalls.
        git_stall_timeout: Duration::from_secs(600),
        ..config(dir.path())
    };
    let app = TestApp::with_config(pool, config).await;
    let silent = Silent::start().await;
    let (repo, _) = linear(0);
    let base = repo.path().to_str().unwrap();
    let slow = json!({
        "name": "slow", "address": "slow@example.org", "base_url": base,
        "base_branch": "master", "archive_url": silent.url("slow"),
    });
    let a = app.post("/api/v1/lists", &app.ci, slow).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["id"].as_i64().unwrap();

    let started = Instant::now();
    patchperf_server::domain::lists::round(&app.state)
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "the round took {took:?}");
    let list = app.get(&format!("/api/v1/lists/{id}")).await.json;
    let error = list["poll_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("reading the archive took longer than 3 s"),
        "{list:#}"
    );
    wait_for("the slow read's git is killed", 10, || {
        git_processes(silent.port).is_empty()
    })
    .await;

    // The hook: bounded by a tenth of the reader's bound, then told to
    // come back.
    let started = Instant::now();
    let a = app
        .post(&format!("/api/v1/lists/{id}/push"), &app.ci, json!({}))
        .await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{a:?}");
    assert!(a.headers.contains_key("retry-after"), "{a:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    wait_for("the hook's git is killed", 10, || {
        git_processes(silent.port).is_empty()
    })
    .await;
}
