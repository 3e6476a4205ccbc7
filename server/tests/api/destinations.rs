//! Where the server connects on a user's word: without
//! `--allow-private-destinations` a git remote or webhook at a loopback
//! address (however written: a number, a name) is refused before anything
//! connects, in the same words as a remote that is not there; a webhook's
//! redirect is not followed, even where private destinations are allowed,
//! and a name it gives resolves through the policy to the URL's port.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use patchperf_server::Config;
use patchperf_server::db::outbox;
use patchperf_server::domain::outbox::deliver::Sender;
use patchperf_testkit::free_port;
use serde_json::json;
use sqlx::PgPool;

use crate::git_limits::Silent;
use crate::helpers::{TestApp, test_config};

const UNREACHABLE: &str = "it cannot be reached from this server (the server log says why)";

fn closed(mirrors: &std::path::Path) -> Config {
    Config {
        local_git: true,
        git_dir: mirrors.to_path_buf(),
        allow_private_destinations: false,
        git_timeout: std::time::Duration::from_secs(30),
        ..test_config()
    }
}

fn tree_request(url: &str, name: &str) -> serde_json::Value {
    json!({
        "name": name, "url": url, "branch": "master", "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 }, "runs": 3,
    })
}

#[sqlx::test(migrations = "../migrations")]
async fn a_git_remote_on_loopback_is_refused_unless_allowed(pool: PgPool) {
    let silent = Silent::start().await;
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool.clone(), closed(mirrors.path())).await;
    let port = silent.port;
    for (k, url) in [
        format!("http://127.0.0.1:{port}/linux.git"),
        format!("http://0x7f000001:{port}/linux.git"),
        format!("http://localhost:{port}/linux.git"),
        format!("https://127.1:{port}/linux.git"),
        format!("git://127.0.0.1:{port}/linux.git"),
        format!("ssh://git@127.0.0.1:{port}/linux.git"),
        format!("http://[::1]:{port}/linux.git"),
    ]
    .iter()
    .enumerate()
    {
        let a = app
            .post(
                "/api/v1/trees",
                &app.ci,
                tree_request(url, &format!("t{k}")),
            )
            .await;
        assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {a:?}");
        assert_eq!(
            a.error(),
            format!("cannot clone {url}: {UNREACHABLE}"),
            "{url}"
        );
    }
    assert_eq!(
        silent.accepted.load(Ordering::SeqCst),
        0,
        "nothing connected"
    );

    // Where an admin allowed private destinations, a port nobody listens
    // on and a remote that never answers are told in the same words.
    let allowed = Config {
        allow_private_destinations: true,
        git_stall_timeout: std::time::Duration::from_secs(2),
        ..closed(mirrors.path())
    };
    let app = TestApp::with_config(pool, allowed).await;
    let nobody = format!("http://127.0.0.1:{}/linux.git", free_port());
    let hangs = format!("http://127.0.0.1:{port}/linux.git");
    for (url, name) in [(&nobody, "nobody"), (&hangs, "hangs")] {
        let a = app
            .post("/api/v1/trees", &app.ci, tree_request(url, name))
            .await;
        assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {a:?}");
        assert_eq!(
            a.error(),
            format!("cannot clone {url}: {UNREACHABLE}"),
            "{url}"
        );
    }
    assert!(
        silent.accepted.load(Ordering::SeqCst) > 0,
        "allowed: git went there"
    );
}

/// A webhook receiver on loopback: `/hook` keeps every call,
/// `/moved` answers 307 to `/hook`.
async fn receiver() -> (u16, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&calls);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new()
        .route(
            "/hook",
            post(move |_: HeaderMap, body: String| async move {
                kept.lock().unwrap().push(body);
                "ok"
            }),
        )
        .route(
            "/moved",
            post(move || async move {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, format!("http://127.0.0.1:{port}/hook"))],
                )
                    .into_response()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, calls)
}

async fn queue_webhook(pool: &PgPool, key: &str, url: &str) {
    let mut tx = pool.begin().await.unwrap();
    let m = outbox::NewMessage {
        key,
        channel: outbox::Channel::Webhook,
        recipient: url,
        subject: "s",
        body: "{}",
        mail_to: None,
        mail_cc: None,
        in_reply_to: None,
        references: None,
    };
    assert!(outbox::queue(&mut tx, &m).await.unwrap());
    tx.commit().await.unwrap();
}

#[sqlx::test(migrations = "../migrations")]
async fn a_webhook_is_not_posted_inside_nor_redirected(pool: PgPool) {
    let (port, calls) = receiver().await;
    let mirrors = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool.clone(), closed(mirrors.path())).await;
    for (key, url) in [
        ("a", format!("http://127.0.0.1:{port}/hook")),
        ("b", format!("http://0x7f000001:{port}/hook")),
        ("c", format!("http://localhost:{port}/hook")),
    ] {
        queue_webhook(&pool, key, &url).await;
    }
    let sender = Sender::new(&app.state.config).unwrap();
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 0);
    for key in ["a", "b", "c"] {
        let r = &outbox::of_key(&pool, key).await.unwrap()[0];
        assert_eq!(r.state, "failed", "{r:?}");
        assert!(
            r.last_error
                .as_deref()
                .unwrap()
                .starts_with("the destination is refused"),
            "{r:?}"
        );
    }
    assert!(calls.lock().unwrap().is_empty(), "nothing was posted");

    // Allowed inside, a redirect is still not followed (the body would go
    // to a place nobody named).
    let allowed = Config {
        allow_private_destinations: true,
        ..closed(mirrors.path())
    };
    queue_webhook(&pool, "d", &format!("http://127.0.0.1:{port}/moved")).await;
    let sender = Sender::new(&allowed).unwrap();
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 0);
    let r = &outbox::of_key(&pool, "d").await.unwrap()[0];
    assert_eq!(r.state, "failed", "{r:?}");
    assert!(
        r.last_error
            .as_deref()
            .unwrap()
            .contains("redirects are not followed"),
        "{r:?}"
    );
    assert!(
        calls.lock().unwrap().is_empty(),
        "the redirect was not followed"
    );
}
