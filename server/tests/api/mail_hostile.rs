//! Mail against hostile input from a repository, through a real SMTP
//! server (aiosmtpd, which keeps each message's `DATA` as it came): an
//! author whose name holds a bare CR and a subject with SMTP smuggling's
//! `\r.\r\n` stop no mail and open no header, the server's own sender
//! going on to the mails after them; a row that cannot be composed is
//! failed with its reason and the next goes out; addresses differing only
//! in case are one recipient.

use std::time::{Duration, Instant};

use patchperf_server::Config;
use patchperf_server::db::outbox;
use patchperf_server::domain::outbox::deliver::Sender;
use patchperf_testkit::smtp::{Relay, header};
use patchperf_testkit::{TestServer, free_port};
use sqlx::PgPool;

use crate::helpers::TestApp;
use crate::mail::{config, measured_change, measured_change_as, queue, rows, webhook};

/// Every outbox row of `key` once none is queued any more.
async fn settled(pool: &PgPool, key: &str) -> Vec<outbox::OutboxRow> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = outbox::of_key(pool, key).await.unwrap();
        if !rows.is_empty() && rows.iter().all(|r| r.state != "queued") {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "still queued after 30 s: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn queue_mail(pool: &PgPool, key: &str, to: &str, mail_to: &str) {
    let mut tx = pool.begin().await.unwrap();
    let m = outbox::NewMessage {
        key,
        channel: outbox::Channel::Mail,
        recipient: to,
        subject: "later",
        body: "a later mail\n",
        mail_to: Some(mail_to),
        mail_cc: None,
        in_reply_to: None,
        references: None,
    };
    assert!(outbox::queue(&mut tx, &m).await.unwrap());
    tx.commit().await.unwrap();
}

/// Whether every CR of `raw` starts a CRLF and every LF ends one.
fn crlf_only(raw: &[u8]) -> bool {
    raw.iter().enumerate().all(|(i, &b)| match b {
        b'\r' => raw.get(i + 1) == Some(&b'\n'),
        b'\n' => i > 0 && raw[i - 1] == b'\r',
        _ => true,
    })
}

#[sqlx::test(migrations = "../migrations")]
async fn a_hostile_commit_author_stops_no_mail_and_opens_no_header(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), dir.path());
    let config = Config {
        outbox_poll: Duration::from_millis(50),
        ..config(dir.path(), Some(relay.port))
    };
    let app = TestApp::with_config(pool.clone(), config).await;
    let (hook, calls) = webhook().await;
    // The reproducer: a bare CR in the change commit's author name,
    // and SMTP smuggling's `\r.\r\n` in its subject.
    let (tree, comparison, commit) = measured_change_as(
        &app,
        &hook,
        "Mallory\rBcc: evil@evil.example",
        "mallory@example.org",
        "fs: smuggle\r.\r\nMAIL FROM:<x@evil.example>\n",
    )
    .await;
    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 4);
    // Queued after it: a mail for someone else.
    queue_mail(
        &pool,
        "later",
        "kh@example.org",
        "Kernel Hacker <kh@example.org>",
    )
    .await;

    // The server's own sender goes through all of them.
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let change = settled(&pool, &format!("change:{comparison}")).await;
    let later = settled(&pool, "later").await;
    server.stop().await;
    for r in change.iter().chain(&later) {
        assert_eq!((r.state.as_str(), r.attempts), ("sent", 1), "{r:?}");
    }
    let health = app.get("/healthz").await.json;
    assert_eq!(health["worker_panics"], 0, "{health}");

    let mails = relay.mails();
    assert_eq!(mails.len(), 4);
    let mut rcpt: Vec<&str> = mails.iter().map(|(h, _)| header(h, "x-rcptto")).collect();
    rcpt.sort_unstable();
    assert_eq!(
        rcpt,
        [
            "kh@example.org",
            "kh@example.org",
            "linux-fsdevel@vger.kernel.org",
            "mallory@example.org"
        ]
    );
    for (h, body) in &mails {
        assert!(h.iter().all(|(k, _)| k != "bcc"), "{h:?}");
        assert!(!body.contains('\r'), "{body}");
    }
    let (h, body) = mails
        .iter()
        .find(|(h, _)| header(h, "x-rcptto") == "mallory@example.org")
        .unwrap();
    // The name as one encoded word (base64 of "Mallory Bcc: evil@evil.example").
    assert_eq!(
        header(h, "to"),
        "=?utf-8?b?TWFsbG9yeSBCY2M6IGV2aWxAZXZpbC5leGFtcGxl?= <mallory@example.org>"
    );
    assert!(
        body.contains(&format!(
            "{commit} (\"fs: smuggle . MAIL FROM:<x@evil.example>\")"
        )),
        "{body}"
    );
    // What came in DATA: CRLF line ends only, nothing for a relay to read
    // as the end of the mail.
    let raw = relay.raw_mails();
    assert_eq!(raw.len(), 4);
    for m in &raw {
        assert!(crlf_only(m), "{}", String::from_utf8_lossy(m));
    }
    let calls = calls.lock().unwrap().clone();
    assert_eq!(
        calls[0].1["commit"]["author"],
        "Mallory Bcc: evil@evil.example <mallory@example.org>"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_mail_that_cannot_be_composed_is_failed_with_its_reason_and_the_next_goes_out(
    pool: PgPool,
) {
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), dir.path());
    let config = config(dir.path(), Some(relay.port));
    let app = TestApp::with_config(pool.clone(), config.clone()).await;
    queue_mail(&pool, "bad", "kh@example.org", "Someone <not an address>").await;
    queue_mail(
        &pool,
        "good",
        "kh@example.org",
        "Kernel Hacker <kh@example.org>",
    )
    .await;
    let sender = Sender::new(&config).unwrap();
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 1);
    let bad = &outbox::of_key(&pool, "bad").await.unwrap()[0];
    assert_eq!((bad.state.as_str(), bad.attempts), ("failed", 1), "{bad:?}");
    let why = bad.last_error.as_deref().unwrap();
    assert!(why.starts_with("the mail cannot be composed"), "{why}");
    assert!(why.contains("not an address"), "{why}");
    let good = &outbox::of_key(&pool, "good").await.unwrap()[0];
    assert_eq!(good.state, "sent", "{good:?}");
    assert_eq!(relay.mails().len(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn addresses_differing_only_in_case_are_one_recipient(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(pool, config(dir.path(), None)).await;
    let (hook, _calls) = webhook().await;
    let (tree, comparison, commit) = measured_change(&app, &hook).await;
    // Lists kept from before the door compared addresses, and an address
    // literal it now refuses.
    sqlx::query(
        "UPDATE trees SET cc = ARRAY['LINUX-FSDEVEL@vger.kernel.org', \
         'linux-fsdevel@VGER.kernel.org', 'KH@Example.ORG', 'root@[127.0.0.1]'] WHERE id = $1",
    )
    .bind(tree)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(queue(&app.state, tree, comparison, &commit).await, 3);
    let mut mailed: Vec<String> = rows(&app.pool, comparison)
        .await
        .into_iter()
        .filter(|r| r.channel == "mail")
        .map(|r| r.recipient)
        .collect();
    mailed.sort();
    assert_eq!(mailed, ["LINUX-FSDEVEL@vger.kernel.org", "kh@example.org"]);
}
