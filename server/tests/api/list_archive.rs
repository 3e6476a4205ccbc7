//! A list followed through its public-inbox archive, as lore serves one: a
//! real v2 inbox written by ezpi and served by `public-inbox-httpd` on a
//! loopback port, cloned and fetched by the server over HTTP. A list that
//! asks for its history reads the archive from its first message; one that
//! does not starts at its end; the push hook reads new messages at once;
//! a new epoch (`git/1.git`) is followed; an archive that cannot be read
//! says so on the list and stops nothing else.

use axum::http::StatusCode;
use patchperf_server::domain::lists;
use patchperf_testkit::free_port;
use patchperf_testkit::public_inbox::Archive;
use serde_json::json;
use sqlx::PgPool;

use crate::git_repo::linear;
use crate::helpers::TestApp;
use crate::lists::{by_subject, config, follow, message, patch, series, series_of};

const LIST: &str = "linux-fsdevel@vger.kernel.org";

/// The raw messages of an mbox as `series` writes it.
fn messages(mbox: &str) -> Vec<String> {
    mbox.split("From x Thu Jan  1 00:00:00 1970\n")
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string)
        .collect()
}

async fn push(app: &TestApp, list: i64) -> serde_json::Value {
    let a = app
        .post(&format!("/api/v1/lists/{list}/push"), &app.ci, json!({}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json
}

#[sqlx::test(migrations = "../migrations")]
async fn a_public_inbox_archive_is_read_by_poll_and_hook_across_epochs(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::create(dir.path(), "linux-fsdevel", LIST);
    // Before anyone follows: a single VFS patch among unrelated traffic.
    archive.add(
        message(
            "close@example.org",
            "[PATCH] fs: use __fput_sync in close(2)",
            None,
            &patch("fs/open.c", "int sync;"),
        )
        .as_bytes(),
    );
    archive.add(
        message(
            "chat@example.org",
            "Re: LSF/MM topic",
            Some("lsf@example.org"),
            "+1\n",
        )
        .as_bytes(),
    );
    let served = archive.serve();
    let app = TestApp::with_config(pool, config(dir.path(), free_port())).await;
    let (repo, _) = linear(0);
    let repo = repo.path().to_str().unwrap().to_string();
    let all = follow(
        &app,
        &repo,
        json!({"name": "fsdevel-all", "archive_url": served.url, "read_history": true}),
    )
    .await;
    let new = follow(
        &app,
        &repo,
        json!({"name": "fsdevel-new", "archive_url": served.url}),
    )
    .await;

    lists::round(&app.state).await.unwrap();
    let list = app.get(&format!("/api/v1/lists/{all}")).await.json;
    assert_eq!(list["messages"], 2, "{list:#}");
    assert!(list["poll_error"].is_null(), "{list:#}");
    assert!(!list["polled_at"].is_null(), "{list:#}");
    let s = series_of(&app, all).await;
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0]["subject"], "[PATCH] fs: use __fput_sync in close(2)");
    assert_eq!(s[0]["message_id"], "close@example.org");
    assert_eq!(s[0]["state"], "queued", "{s:#?}");
    // Following from now: the history is not read.
    let list = app.get(&format!("/api/v1/lists/{new}")).await.json;
    assert_eq!(list["messages"], 0, "{list:#}");

    // A series posted: the hook reads it at once, for both.
    for m in messages(&series("open", 1, &["fs/open.c", "fs/namei.c"])) {
        archive.add(m.as_bytes());
    }
    assert_eq!(push(&app, new).await["messages"], 3);
    assert_eq!(push(&app, new).await["messages"], 0, "read once");
    assert_eq!(push(&app, all).await["messages"], 3);
    lists::round(&app.state).await.unwrap();
    for list in [all, new] {
        let s = series_of(&app, list).await;
        let v1 = by_subject(&s, "[PATCH 0/2] fs: faster open");
        assert_eq!(v1["total"], 2);
        assert_ne!(v1["state"], "waiting", "{v1:#}");
    }

    // The archive grows a new epoch: its messages are read from git/1.git.
    assert_eq!(archive.new_epoch(), 1);
    archive.add(
        message(
            "stat@example.org",
            "[PATCH] fs: fstat without the lock",
            None,
            &patch("fs/stat.c", "int nolock;"),
        )
        .as_bytes(),
    );
    assert_eq!(push(&app, new).await["messages"], 1);
    assert_eq!(push(&app, all).await["messages"], 1);
    lists::round(&app.state).await.unwrap();
    let s = series_of(&app, all).await;
    by_subject(&s, "[PATCH] fs: fstat without the lock");
    let epochs: Vec<(i32, String)> =
        sqlx::query_as("SELECT epoch, url FROM list_epochs WHERE list_id = $1 ORDER BY epoch")
            .bind(all)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        epochs,
        [
            (0, format!("{}/git/0.git", served.url)),
            (1, format!("{}/git/1.git", served.url))
        ]
    );

    // An archive that does not answer is noted on its list; the others
    // are read as before.
    let gone = follow(
        &app,
        &repo,
        json!({"name": "gone", "archive_url": format!("http://127.0.0.1:{}/gone", free_port())}),
    )
    .await;
    lists::round(&app.state).await.unwrap();
    let list = app.get(&format!("/api/v1/lists/{gone}")).await.json;
    assert!(list["poll_error"].is_string(), "{list:#}");
    let page = app.get("/lists").await;
    assert!(page.body.contains("gone"), "{}", page.body);
    assert!(page.body.contains(&served.url), "{}", page.body);
}

/// An archive whose epoch was rewritten (public-inbox's purge rewrites the
/// history after the purged message) goes on being read: from where the
/// histories fork when the commit read last is still known, else from
/// the new head, the list saying which (issue 40: it stopped the list for
/// good with 422).
#[sqlx::test(migrations = "../migrations")]
async fn a_rewritten_archive_is_read_on_and_says_so(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::create(dir.path(), "linux-fsdevel", LIST);
    let add = |id: &str| {
        archive.add(
            message(
                id,
                &format!("[PATCH] fs: {id}"),
                None,
                &patch("fs/open.c", "int x;"),
            )
            .as_bytes(),
        )
    };
    let first = add("m1@example.org");
    add("m2@example.org");
    let served = archive.serve();
    let app = TestApp::with_config(pool, config(dir.path(), free_port())).await;
    let (repo, _) = linear(0);
    let list = follow(
        &app,
        repo.path().to_str().unwrap(),
        json!({"archive_url": served.url, "read_history": true}),
    )
    .await;
    let path = format!("/api/v1/lists/{list}");
    lists::round(&app.state).await.unwrap();
    assert_eq!(app.get(&path).await.json["messages"], 2);

    // A purge: m2 is gone, m3 written after m1.
    archive.rewrite_from(first.epoch, &first.commit);
    add("m3@example.org");
    push(&app, list).await;
    let l = app.get(&path).await.json;
    assert_eq!(l["messages"], 3, "{l:#}");
    assert_eq!(
        l["poll_error"],
        format!(
            "epoch 0 was rewritten (a purge?) after {}: read again from there",
            &first.commit[..12]
        )
    );

    // Again, and this time the server's mirror is gone too (evicted):
    // the commit read last is unknown, so reading goes on from the head.
    archive.rewrite_from(first.epoch, &first.commit);
    let m4 = add("m4@example.org");
    std::fs::remove_dir_all(dir.path().join("mirrors")).unwrap();
    push(&app, list).await;
    let l = app.get(&path).await.json;
    assert_eq!(l["messages"], 3, "m4 is not read: {l:#}");
    let said = l["poll_error"].as_str().unwrap();
    assert!(
        said.starts_with("epoch 0 was rewritten and the commit read last (")
            && said.contains(&format!(
                "reading goes on from its head {}",
                &m4.commit[..12]
            )),
        "{said}"
    );
    add("m5@example.org");
    push(&app, list).await;
    let l = app.get(&path).await.json;
    assert_eq!(l["messages"], 4, "{l:#}");
    assert!(l["poll_error"].is_null(), "{l:#}");
}

/// A history longer than a round reads (10,000 messages an epoch) is read
/// over rounds that follow one another at once, epoch by epoch: the first
/// round stops in epoch 0 and leaves the list due, the next reads the
/// rest of epoch 0 before epoch 1.
#[sqlx::test(migrations = "../migrations")]
async fn a_long_history_is_read_in_rounds_epoch_by_epoch(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::create(dir.path(), "linux-fsdevel", LIST);
    // 100 threads of chat, each a root and its replies.
    let chat = |range: std::ops::Range<usize>| {
        range.map(|k| {
            let root = format!("chat-{}@example.org", k % 100);
            let (id, parent) = if k < 100 {
                (root.clone(), None)
            } else {
                (format!("chat-{k}@example.org"), Some(root.as_str()))
            };
            message(&id, "Re: LSF/MM topic", parent, "+1\n").into_bytes()
        })
    };
    assert_eq!(archive.import(0, chat(0..10_500)), 10_500);
    assert_eq!(archive.new_epoch(), 1);
    assert_eq!(archive.import(1, chat(10_500..10_800)), 300);
    let served = archive.serve();
    let app = TestApp::with_config(pool, config(dir.path(), free_port())).await;
    let (repo, _) = linear(0);
    let repo = repo.path().to_str().unwrap().to_string();
    let all = follow(
        &app,
        &repo,
        json!({"name": "fsdevel-all", "archive_url": served.url, "read_history": true}),
    )
    .await;

    lists::round(&app.state).await.unwrap();
    let list = app.get(&format!("/api/v1/lists/{all}")).await.json;
    assert_eq!(list["messages"], 10_000, "{list:#}");
    assert!(list["polled_at"].is_null(), "still due: {list:#}");
    let epochs: i64 = sqlx::query_scalar("SELECT count(*) FROM list_epochs WHERE list_id = $1")
        .bind(all)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(epochs, 1, "epoch 1 waits until epoch 0 is read");

    lists::round(&app.state).await.unwrap();
    let list = app.get(&format!("/api/v1/lists/{all}")).await.json;
    assert_eq!(list["messages"], 10_800, "{list:#}");
    assert!(!list["polled_at"].is_null(), "{list:#}");
    assert!(list["poll_error"].is_null(), "{list:#}");
}

/// The archive's manifest says which epochs changed: a read finding every
/// fingerprint as it was neither fetches nor probes for a next epoch, and
/// a new message fetches only the epoch it went to.
#[sqlx::test(migrations = "../migrations")]
async fn an_unchanged_epoch_is_neither_fetched_nor_read(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::create(dir.path(), "linux-fsdevel", LIST);
    let chat = |k: usize| message(&format!("c{k}@example.org"), "LSF/MM", None, "+1\n");
    archive.import(0, (0..3).map(|k| chat(k).into_bytes()));
    archive.new_epoch();
    archive.import(1, (3..5).map(|k| chat(k).into_bytes()));
    let served = archive.serve();
    let app = TestApp::with_config(pool, config(dir.path(), free_port())).await;
    let (repo, _) = linear(0);
    let repo = repo.path().to_str().unwrap().to_string();
    let list = follow(
        &app,
        &repo,
        json!({"name": "fsdevel-all", "archive_url": served.url, "read_history": true}),
    )
    .await;
    lists::round(&app.state).await.unwrap();
    let reads = async || app.state.git.usage().await.remote_reads;
    let after_first = reads().await;
    let stored = app.get(&format!("/api/v1/lists/{list}")).await.json;
    assert_eq!(stored["messages"], 5, "{stored:#}");
    assert!(stored["poll_error"].is_null(), "{stored:#}");

    assert_eq!(push(&app, list).await["messages"], 0);
    assert_eq!(
        reads().await,
        after_first,
        "nothing changed: nothing fetched"
    );

    archive.add(chat(5).as_bytes());
    assert_eq!(push(&app, list).await["messages"], 1);
    assert_eq!(reads().await, after_first + 1, "only epoch 1 is fetched");
}
