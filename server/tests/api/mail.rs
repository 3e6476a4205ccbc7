//! Reports told by mail and webhook, against a real SMTP server (Debian's
//! aiosmtpd, each message written to a Maildir) and a real HTTP listener:
//! a change at a tracked tree's commit is mailed to its author, Cc the
//! tree's list (malformed addresses skipped), with the 0-day text report
//! and absolute links, and posted as JSON; queued twice, sent once;
//! without a public URL nothing is queued; without a relay mail stays
//! queued until a server with one sends it;
//! with the relay down it is retried and the error recorded. Hostile
//! authors, subjects and addresses: `mail_hostile.rs`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::routing::post;
use patchperf_server::db::outbox;
use patchperf_server::domain::outbox::deliver::Sender;
use patchperf_server::domain::outbox::notify::queue_report;
use patchperf_server::{AppState, Config};
use patchperf_testkit::TestServer;
use patchperf_testkit::smtp::{Relay, header};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::bisections::Lab;
use crate::git_repo::{commit_as, commit_file, linear};
use crate::helpers::{TestApp, test_config};
use patchperf_testkit::free_port;

/// The change point's words, as the tree's watcher passes them; the mail
/// names the comparison's own most important verdict instead when it is a
/// real change.
const HEADLINE: &str = "+50.0% improvement of will-it-scale.per_process_ops (open1)";

/// What the mail's subject says: the comparison's headline change.
async fn measured_headline(app: &TestApp, comparison: i64) -> String {
    let a = app.get(&format!("/api/v1/comparisons/{comparison}")).await;
    let report = &a.json["verdict"]["reports"][0];
    let ops = report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "will-it-scale.per_process_ops")
        .unwrap();
    format!(
        "{:+.1}% improvement of will-it-scale.per_process_ops (open1)",
        ops["change"].as_f64().unwrap()
    )
}

/// A webhook listener: every call's Idempotency-Key and JSON.
pub async fn webhook() -> (String, Arc<Mutex<Vec<(String, Value)>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: String| async move {
            let key = headers["idempotency-key"].to_str().unwrap().to_string();
            kept.lock()
                .unwrap()
                .push((key, serde_json::from_str(&body).unwrap()));
            "ok"
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), calls)
}

pub fn config(mirrors: &Path, smtp_port: Option<u16>) -> Config {
    Config {
        local_git: true,
        git_dir: mirrors.to_path_buf(),
        public_url: Some("https://perf.example.org/".into()),
        smtp_url: smtp_port.map(|p| format!("smtp://127.0.0.1:{p}")),
        mail_from: Some("patchperf <perf@example.org>".into()),
        outbox_retry: Duration::ZERO,
        outbox_max_attempts: 3,
        ..test_config()
    }
}

/// A tracked tree whose second pushed commit makes open1 50% faster,
/// measured by the played lab: (tree id, the comparison that measured
/// that commit, the commit).
pub async fn measured_change(app: &TestApp, hook: &str) -> (i64, i64, String) {
    measured_change_as(app, hook, "Kernel Hacker", "kh@example.org", "fs: step 2").await
}

/// [`measured_change`] with the second commit by `name <email>` with
/// `message` (kept verbatim).
pub async fn measured_change_as(
    app: &TestApp,
    hook: &str,
    name: &str,
    email: &str,
    message: &str,
) -> (i64, i64, String) {
    let (repo, mut ids) = linear(0);
    let machine = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();
    let body = json!({
        "name": "vfs.all", "url": url, "branch": "master", "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 }, "runs": 3,
        "cc": ["linux-fsdevel@vger.kernel.org"], "webhook_url": hook,
    });
    let a = app.post("/api/v1/trees", &app.ci, body).await;
    assert!(a.status.is_success(), "{a:?}");
    let tree = a.json["tree"]["id"].as_i64().unwrap();
    // Lists kept from before addresses were checked: the malformed one is
    // skipped, the author is mailed once.
    sqlx::query(
        "UPDATE trees SET cc = cc || ARRAY['not an address', 'kh@example.org'] WHERE id = $1",
    )
    .bind(tree)
    .execute(&app.pool)
    .await
    .unwrap();
    let mut comparison = 0;
    for k in [1, 2] {
        let file = format!("fs/step{k}.c");
        ids.push(if k == 1 {
            commit_file(repo.path(), &file, "int x;\n", "fs: step 1")
        } else {
            commit_as(repo.path(), &file, b"int x;\n", message, name, email)
        });
        let a = app
            .post(&format!("/api/v1/trees/{tree}/push"), &app.ci, json!({}))
            .await;
        comparison = a.json["comparison_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{a:?}"));
        let lab = Lab {
            culprit: Some(2),
            broken: Vec::new(),
            ids: ids.clone(),
        };
        lab.drain(app, machine).await;
    }
    (tree, comparison, ids[2].clone())
}

pub async fn queue(state: &AppState, tree: i64, comparison: i64, commit: &str) -> usize {
    let mut tx = state.db.begin().await.unwrap();
    let n = queue_report(state, &mut tx, tree, comparison, commit, HEADLINE)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    n
}

pub async fn rows(pool: &PgPool, comparison: i64) -> Vec<outbox::OutboxRow> {
    outbox::of_key(pool, &format!("change:{comparison}"))
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_change_is_mailed_to_the_author_cc_the_list_once_and_posted(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), dir.path());
    let config = config(dir.path(), Some(relay.port));
    let app = TestApp::with_config(pool, config.clone()).await;
    let (hook, calls) = webhook().await;
    let (tree, comparison, commit) = measured_change(&app, &hook).await;
    let headline = measured_headline(&app, comparison).await;

    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 3);
    assert_eq!(
        queue(&app.state, tree, comparison, &commit).await,
        0,
        "queued once"
    );
    // Two servers' senders at once still send each message once.
    let (a, b) = (Sender::new(&config).unwrap(), Sender::new(&config).unwrap());
    let (sa, sb) = tokio::join!(a.send_due(&app.state), b.send_due(&app.state));
    assert_eq!(sa.unwrap() + sb.unwrap(), 3);
    assert_eq!(a.send_due(&app.state).await.unwrap(), 0);
    assert_eq!(
        queue(&app.state, tree, comparison, &commit).await,
        0,
        "sent once"
    );

    let mut mails = relay.mails();
    mails.sort_by(|x, y| header(&x.0, "x-rcptto").cmp(header(&y.0, "x-rcptto")));
    let rcpt: Vec<&str> = mails.iter().map(|(h, _)| header(h, "x-rcptto")).collect();
    assert_eq!(rcpt, ["kh@example.org", "linux-fsdevel@vger.kernel.org"]);
    let short = &commit[..10];
    let report = format!("https://perf.example.org/comparisons/{comparison}");
    for (h, body) in &mails {
        assert_eq!(header(h, "x-mailfrom"), "perf@example.org");
        assert_eq!(header(h, "from"), "patchperf <perf@example.org>");
        assert_eq!(header(h, "to"), "\"Kernel Hacker\" <kh@example.org>");
        assert_eq!(header(h, "cc"), "linux-fsdevel@vger.kernel.org");
        assert_eq!(
            header(h, "subject"),
            format!("[vfs.all] {short}: {headline}")
        );
        assert_eq!(
            header(h, "message-id"),
            format!("<patchperf.change.{comparison}@example.org>")
        );
        assert!(body.starts_with("Hello,\n"), "{body}");
        assert!(
            body.contains(&format!("{commit} (\"fs: step 2\")")),
            "{body}"
        );
        // The 0-day text report, linking absolutely.
        assert!(body.contains(&format!("\nreport: {report}\n")), "{body}");
        assert!(body.contains(&format!("commit: {commit}")), "{body}");
        assert!(
            body.contains("%stddev     %change         %stddev"),
            "{body}"
        );
        assert!(body.contains("will-it-scale.per_process_ops"), "{body}");
        // With the sentence of why (issue 27), as report.txt has it.
        let change = headline.split(' ').next().unwrap();
        assert!(body.contains(&format!("\nwhy: open1 {change}: ")), "{body}");
        assert!(!body.contains(" /comparisons/"), "no relative link: {body}");
    }

    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (key, call) = &calls[0];
    assert!(
        key.starts_with(&format!("patchperf-change-{comparison}-")),
        "{key}"
    );
    assert_eq!(call["event"], "change");
    assert_eq!(call["tree"]["name"], "vfs.all");
    assert_eq!(call["commit"]["sha"], commit.as_str());
    assert_eq!(call["commit"]["author"], "Kernel Hacker <kh@example.org>");
    assert_eq!(call["comparison_id"], comparison);
    assert_eq!(call["report_url"], report.as_str());
    assert_eq!(call["headline"], headline.as_str());

    let rows = rows(&app.pool, comparison).await;
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|r| r.state == "sent" && r.attempts == 1),
        "{rows:?}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn without_a_relay_mail_waits_for_a_server_with_one(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool.clone(), config(dir.path(), None)).await;
    let (hook, calls) = webhook().await;
    let (tree, comparison, commit) = measured_change(&app, &hook).await;
    // A server without a public URL cannot link absolutely: nothing queued.
    let unlinked = AppState::new(
        pool.clone(),
        Config {
            public_url: None,
            ..config(dir.path(), None)
        },
    );
    assert_eq!(queue(&unlinked, tree, comparison, &commit).await, 0);
    assert!(rows(&pool, comparison).await.is_empty());
    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 3);

    let sender = Sender::new(&app.state.config).unwrap();
    assert!(!sender.mails());
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 1, "the webhook");
    assert_eq!(calls.lock().unwrap().len(), 1);
    let health = app.get("/healthz").await.json;
    assert_eq!(
        (
            health["mail_queued"].as_i64(),
            health["mail_relay"].as_bool()
        ),
        (Some(2), Some(false))
    );
    let queued: Vec<(String, i32)> = rows(&pool, comparison)
        .await
        .into_iter()
        .filter(|r| r.state == "queued")
        .map(|r| (r.channel, r.attempts))
        .collect();
    assert_eq!(queued, [("mail".into(), 0), ("mail".into(), 0)]);

    // A server started later with a relay sends what waited, by its own
    // sender.
    let relay = Relay::start(free_port(), dir.path());
    let restarted = Config {
        outbox_poll: Duration::from_millis(50),
        ..config(dir.path(), Some(relay.port))
    };
    let server = TestServer::serve(
        AppState::new(pool.clone(), restarted),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await;
    // Marked sent in the transaction that took them, after the relay
    // accepted: wait for the commit, not only the mail.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rows(&pool, comparison)
        .await
        .iter()
        .all(|r| r.state == "sent")
    {
        assert!(Instant::now() < deadline, "the queued mail was not sent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
    assert_eq!(relay.mails().len(), 2);
    assert_eq!(calls.lock().unwrap().len(), 1, "the webhook went once");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_relay_that_is_down_is_tried_again_and_its_error_kept(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = config(dir.path(), Some(port));
    let app = TestApp::with_config(pool.clone(), config.clone()).await;
    let (hook, _calls) = webhook().await;
    let (tree, comparison, commit) = measured_change(&app, &hook).await;
    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 3);

    let sender = Sender::new(&config).unwrap();
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 1, "the webhook");
    let mail: Vec<_> = rows(&pool, comparison)
        .await
        .into_iter()
        .filter(|r| r.channel == "mail")
        .collect();
    for r in &mail {
        assert_eq!((r.state.as_str(), r.attempts), ("queued", 1), "{r:?}");
        assert!(
            r.last_error.as_deref().is_some_and(|e| !e.is_empty()),
            "{r:?}"
        );
    }

    // Back up before the last attempt: sent, the error cleared.
    let relay = Relay::start(port, dir.path());
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 2);
    assert_eq!(relay.mails().len(), 2);
    for r in rows(&pool, comparison).await {
        assert_eq!(
            (r.state.as_str(), r.last_error),
            ("sent", None),
            "{}",
            r.recipient
        );
    }

    // Down for every attempt: given up, the error kept.
    drop(relay);
    let other = format!("change:{comparison}-again");
    let mut tx = pool.begin().await.unwrap();
    let m = outbox::NewMessage {
        key: &other,
        channel: outbox::Channel::Mail,
        recipient: "kh@example.org",
        subject: "s",
        body: "b",
        mail_to: Some("kh@example.org"),
        mail_cc: None,
        in_reply_to: None,
        references: None,
    };
    assert!(outbox::queue(&mut tx, &m).await.unwrap());
    tx.commit().await.unwrap();
    for _ in 0..config.outbox_max_attempts + 1 {
        assert_eq!(sender.send_due(&app.state).await.unwrap(), 0);
    }
    let r = &outbox::of_key(&pool, &other).await.unwrap()[0];
    assert_eq!((r.state.as_str(), r.attempts), ("failed", 3), "{r:?}");
    assert!(r.last_error.is_some());
}

#[sqlx::test(migrations = "../migrations")]
async fn a_change_point_at_one_commit_is_queued_for_its_author_by_itself(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(dir.path(), None)).await;
    let (hook, _calls) = webhook().await;
    let (tree, comparison, commit) = measured_change(&app, &hook).await;
    assert!(rows(&app.pool, comparison).await.is_empty());

    // Writing the history finds the shift at the commit and queues its
    // report: the author, the list, the hook.
    patchperf_server::domain::tree::record_history(&app.state)
        .await
        .unwrap();
    let changes = app.get(&format!("/api/v1/changes?tree={tree}")).await;
    assert_eq!(
        changes.json["changes"][0]["commit_sha"],
        commit.as_str(),
        "{changes:?}"
    );
    let mut queued: Vec<(String, String)> = rows(&app.pool, comparison)
        .await
        .into_iter()
        .map(|r| (r.channel, r.recipient))
        .collect();
    queued.sort();
    assert_eq!(
        queued,
        [
            ("mail".to_string(), "kh@example.org".to_string()),
            (
                "mail".to_string(),
                "linux-fsdevel@vger.kernel.org".to_string()
            ),
            ("webhook".to_string(), hook.clone()),
        ]
    );
    // Queued once: asking again adds nothing.
    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 0);
}
