//! Mailing lists followed, with mail handed in through the API and the
//! played lab measuring: a thread's series is assembled, queued patch by
//! patch behind CI, measured, and answered once in its thread (checked
//! header by header at a real SMTP server); its v2 supersedes it and its
//! answer says what changed since v1; a review is no patch, a patch outside
//! the paths is skipped saying why, a series whose 2/3 never comes is
//! recorded incomplete. The archive side, against a real public-inbox:
//! `list_archive.rs`.

use axum::http::{Method, StatusCode};
use patchperf_server::Config;
use patchperf_server::domain::lists;
use patchperf_server::domain::outbox::deliver::Sender;
use patchperf_testkit::free_port;
use patchperf_testkit::smtp::{Relay, header};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::bisections::Lab;
use crate::git_repo::linear;
use crate::helpers::{TestApp, test_config};

const LIST: &str = "linux-fsdevel@vger.kernel.org";
const AUTHOR: &str = "Jörg Hacker <jh@example.org>";

pub fn config(dir: &std::path::Path, smtp_port: u16) -> Config {
    Config {
        local_git: true,
        git_dir: dir.join("mirrors"),
        public_url: Some("https://perf.example.org/".into()),
        smtp_url: Some(format!("smtp://127.0.0.1:{smtp_port}")),
        mail_from: Some("patchperf <perf@example.org>".into()),
        outbox_retry: std::time::Duration::ZERO,
        ..test_config()
    }
}

/// One raw message.
pub fn message(id: &str, subject: &str, parent: Option<&str>, body: &str) -> String {
    let thread = parent.map_or(String::new(), |p| {
        format!("In-Reply-To: <{p}>\nReferences: <{p}>\n")
    });
    format!(
        "From: {AUTHOR}\nTo: {LIST}\nCc: Al Viro <viro@zeniv.linux.org.uk>\n\
         Subject: {subject}\nDate: Wed, 2 Dec 2026 10:00:00 +0000\nMessage-ID: <{id}>\n\
         {thread}MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n{body}"
    )
}

/// A patch's body changing `file`.
pub fn patch(file: &str, line: &str) -> String {
    format!(
        "{line}\n\nSigned-off-by: {AUTHOR}\n---\n {file} | 1 +\n 1 file changed, 1 insertion(+)\n\n\
         diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1 +1,2 @@\n int x;\n+{line}\n\
         -- \n2.39.5\n"
    )
}

/// A cover letter and `n` patches of version `v`, as `git send-email`
/// threads them (each patch answering the cover letter); as one mbox.
pub fn series(tag: &str, v: u32, files: &[&str]) -> String {
    let n = files.len();
    let prefix = if v == 1 {
        "PATCH".to_string()
    } else {
        format!("PATCH v{v}")
    };
    let cover = format!("{tag}-v{v}-0@example.org");
    let mut mbox = format!(
        "From x Thu Jan  1 00:00:00 1970\n{}\n",
        message(
            &cover,
            &format!("[{prefix} 0/{n}] fs: faster {tag}"),
            None,
            "Two steps.\n"
        )
    );
    for (k, file) in files.iter().enumerate() {
        let k = k + 1;
        let raw = message(
            &format!("{tag}-v{v}-{k}@example.org"),
            &format!("[{prefix} {k}/{n}] fs: step {k}"),
            Some(&cover),
            &patch(file, &format!("int step{k}_v{v};")),
        );
        mbox.push_str(&format!("From x Thu Jan  1 00:00:00 1970\n{raw}\n"));
    }
    mbox
}

pub async fn hand_in(app: &TestApp, list: i64, kind: &str, body: &str) -> crate::helpers::Answer {
    app.send(
        Method::POST,
        &format!("/api/v1/lists/{list}/messages"),
        Some(&app.ci),
        &[("content-type", kind.to_string())],
        Some(axum::body::Body::from(body.to_string())),
    )
    .await
}

pub async fn follow(app: &TestApp, repo: &str, extra: Value) -> i64 {
    let mut body = json!({
        "name": "linux-fsdevel", "address": LIST, "base_url": repo, "base_branch": "master",
        "runs": 3, "report_improvements": true,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let a = app.post("/api/v1/lists", &app.ci, body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    a.json["id"].as_i64().unwrap()
}

/// Hands `mbox` in to `list`, runs one reader round, and returns the
/// list's series: a list test's usual step.
pub async fn post(app: &TestApp, list: i64, mbox: &str) -> Vec<Value> {
    let a = hand_in(app, list, "application/mbox", mbox).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    lists::round(&app.state).await.unwrap();
    series_of(app, list).await
}

pub async fn series_of(app: &TestApp, list: i64) -> Vec<Value> {
    let a = app.get(&format!("/api/v1/series?list={list}")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json["series"].as_array().unwrap().clone()
}

/// Where most list tests start: a one-commit base repository, the app
/// (its mail to a relay on a free port, running when `relay`), one list
/// followed with `extra` over it, and a registered lab machine.
pub struct ListLab {
    pub app: TestApp,
    pub config: Config,
    pub list: i64,
    pub relay: Option<Relay>,
    pub machine: i64,
    /// The base repository's commits, for a played `Lab`.
    pub ids: Vec<String>,
    pub repo: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

pub async fn list_lab(pool: PgPool, relay: bool, extra: Value) -> ListLab {
    let dir = tempfile::tempdir().unwrap();
    let relay = relay.then(|| Relay::start(free_port(), dir.path()));
    let config = config(
        dir.path(),
        relay.as_ref().map_or_else(free_port, |r| r.port),
    );
    let app = TestApp::with_config(pool, config.clone()).await;
    let (repo, ids) = linear(0);
    let machine = app.register("lab-1").await;
    let list = follow(&app, repo.path().to_str().unwrap(), extra).await;
    ListLab {
        app,
        config,
        list,
        relay,
        machine,
        ids,
        repo,
        _dir: dir,
    }
}

pub fn by_subject<'a>(all: &'a [Value], subject: &str) -> &'a Value {
    all.iter()
        .find(|s| s["subject"] == subject)
        .unwrap_or_else(|| panic!("no series {subject:?} in {all:#?}"))
}

#[sqlx::test(migrations = "../migrations")]
async fn a_posted_series_is_measured_patch_by_patch_and_answered_in_its_thread(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), dir.path());
    let config = config(dir.path(), relay.port);
    let app = TestApp::with_config(pool, config.clone()).await;
    let (repo, ids) = linear(0);
    let machine = app.register("lab-1").await;
    // The played lab measures open1 only.
    let only_open1 = json!({"workload_map": [{"paths": ["fs/**"], "workloads": ["open1"]}]});
    let list = follow(&app, repo.path().to_str().unwrap(), only_open1).await;

    // v1 of a two-patch series, a review of its 1/2, a patch outside the
    // paths and a series whose 2/3 never comes.
    let mut mbox = series("open", 1, &["fs/open.c", "fs/namei.c"]);
    let review = message(
        "review@example.org",
        "Re: [PATCH 1/2] fs: step 1",
        Some("open-v1-1@example.org"),
        "> int x;\n\nReviewed-by: Jan Kara <jack@suse.cz>\n",
    );
    mbox.push_str(&format!("From x Thu Jan  1 00:00:00 1970\n{review}\n"));
    let mm = message(
        "mm@example.org",
        "[PATCH] mm: faster fault",
        None,
        &patch("mm/memory.c", "int mm;"),
    );
    mbox.push_str(&format!("From x Thu Jan  1 00:00:00 1970\n{mm}\n"));
    let three = series("three", 1, &["fs/stat.c", "fs/stat.c", "fs/stat.c"]);
    let without_2: String = three
        .split_inclusive("\nFrom x ")
        .filter(|m| !m.contains("three-v1-2@"))
        .collect();
    mbox.push_str(&without_2);
    let a = hand_in(&app, list, "application/mbox", &mbox).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["taken"], 8, "{a:?}");
    assert_eq!(a.json["refused"], json!([]));
    // Handed in again: known, nothing new.
    let again = hand_in(&app, list, "application/mbox", &mbox).await;
    assert_eq!(
        (again.json["taken"].clone(), again.json["known"].clone()),
        (json!(0), json!(8))
    );

    lists::round(&app.state).await.unwrap();
    let all = series_of(&app, list).await;
    assert_eq!(all.len(), 3, "the review is no series: {all:#?}");
    let v1 = by_subject(&all, "[PATCH 0/2] fs: faster open");
    assert_eq!(v1["state"], "queued", "{v1:#}");
    let reason = v1["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("no base-commit: based on the head of master when it arrived"),
        "{v1:#}"
    );
    assert!(
        reason.ends_with(
            ". Measured on open1: the workloads the list's rules give the files it changes."
        ),
        "{v1:#}"
    );
    let mm = by_subject(&all, "[PATCH] mm: faster fault");
    assert_eq!(mm["state"], "skipped");
    assert!(
        mm["reason"].as_str().unwrap().contains("only mm/memory.c"),
        "{mm:#}"
    );
    let three = by_subject(&all, "[PATCH 0/3] fs: faster three");
    assert_eq!(three["state"], "waiting");
    assert_eq!(three["missing"], json!([2]));

    // Behind CI: the list's comparison and its steps claim last.
    let v1_comparison = v1["comparison_id"].as_i64().unwrap();
    let priority: Vec<i16> =
        sqlx::query_scalar("SELECT priority FROM comparisons WHERE id = $1 OR parent_id = $1")
            .bind(v1_comparison)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(priority, [-2, -2, -2]);

    // Patch 2 makes open1 faster.
    let lab = Lab {
        culprit: Some(2),
        broken: Vec::new(),
        ids: ids.clone(),
    };
    lab.drain(&app, machine).await;
    lists::round(&app.state).await.unwrap();
    let v1 = app.get(&format!("/api/v1/series/{}", v1["id"])).await.json;
    assert_eq!(v1["state"], "reported", "{v1:#}");
    let sender = Sender::new(&config).unwrap();
    // Author and list: Al Viro is in the thread, but the list Cc's only
    // itself unless it asks for the thread.
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 2);

    let mails = relay.mails();
    assert_eq!(mails.len(), 2);
    let (h, body) = &mails[0];
    assert_eq!(header(h, "subject"), "Re: [PATCH 0/2] fs: faster open");
    assert_eq!(header(h, "in-reply-to"), "<open-v1-0@example.org>");
    assert_eq!(header(h, "references"), "<open-v1-0@example.org>");
    // The name as RFC 2047 carries it.
    assert_eq!(
        header(h, "to"),
        "=?utf-8?b?SsO2cmcgSGFja2Vy?= <jh@example.org>"
    );
    assert_eq!(header(h, "cc"), LIST);
    let id = v1["id"].as_i64().unwrap();
    assert_eq!(
        header(h, "message-id"),
        format!("<patchperf.series.{id}@example.org>")
    );
    assert_eq!(
        v1["reply_message_id"],
        format!("patchperf.series.{id}@example.org")
    );
    // 0-day's headline, +50% give or take the lab's noise.
    assert!(
        body.contains("patchperf noticed a +4") || body.contains("patchperf noticed a +50."),
        "{body}"
    );
    assert!(
        body.contains("% improvement of will-it-scale.per_process_ops (open1) on:\n\n    \"[PATCH 0/2] fs: faster open\" (v1, 2 patches, posted to linux-fsdevel)"),
        "{body}"
    );
    assert!(
        body.contains("The change comes with patch 2/2 (\"fs: step 2\")"),
        "{body}"
    );
    assert!(
        body.contains("| Reported-by: patchperf <perf@example.org>"),
        "{body}"
    );
    assert!(
        body.contains(&format!("| Closes: https://perf.example.org/series/{id}")),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "https://perf.example.org/comparisons/{v1_comparison}"
        )),
        "{body}"
    );

    // The series' page answers first as the comparison's does, naming the
    // patch; the comparison's page leads back to the series and its list.
    let page = app.get(&format!("/series/{id}")).await.body;
    // Its author by name, there and in the list's table of series.
    assert!(
        page.contains("<dd>Jörg Hacker &#60;jh@example.org&#62;</dd>"),
        "{page}"
    );
    let list_page = app.get(&format!("/lists/{list}")).await.body;
    assert!(
        list_page.contains("<td>Jörg Hacker &#60;jh@example.org&#62;</td>"),
        "{list_page}"
    );
    let answer = &page[page.find("<section class=\"summary\">").expect(&page)..];
    let answer = &answer[..answer.find("</section>").unwrap()];
    assert!(
        answer.contains("<strong class=\"verdict\">improvement</strong>: +")
            && answer.contains("% interval")
            && answer.contains("from patch 2/2 “fs: step 2”"),
        "{answer}"
    );
    let page = app.get(&format!("/comparisons/{v1_comparison}")).await.body;
    assert!(
        page.contains(&format!(
            "Measures <a href=\"/series/{id}\">v1 of a series</a> posted to <a \
             href=\"/lists/{list}\">linux-fsdevel</a>."
        )),
        "{page}"
    );

    // v2: its own answer, naming what changed since v1; nothing new for v1.
    let v2 = series("open", 2, &["fs/open.c", "fs/namei.c"]);
    let a = hand_in(&app, list, "application/mbox", &v2).await;
    assert_eq!(a.json["taken"], 3, "{a:?}");
    lists::round(&app.state).await.unwrap();
    let all = series_of(&app, list).await;
    let v2 = by_subject(&all, "[PATCH v2 0/2] fs: faster open");
    assert_eq!(v2["state"], "queued", "{v2:#}");
    assert_eq!(v2["previous_id"], id);
    // In v2 patch 1 does it.
    let lab = Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids,
    };
    lab.drain(&app, machine).await;
    lists::round(&app.state).await.unwrap();
    let v2 = app.get(&format!("/api/v1/series/{}", v2["id"])).await.json;
    assert_eq!(v2["state"], "reported", "{v2:#}");
    assert_eq!(sender.send_due(&app.state).await.unwrap(), 2);
    let mails = relay.mails();
    let (h, body) = mails
        .iter()
        .find(|(h, _)| header(h, "in-reply-to") == "<open-v2-0@example.org>")
        .expect("v2 answered in its own thread");
    assert_eq!(header(h, "subject"), "Re: [PATCH v2 0/2] fs: faster open");
    assert!(
        body.contains("The change comes with patch 1/2 (\"fs: step 1\")"),
        "{body}"
    );
    assert!(
        body.contains(&format!("Since v1 (comparison {v1_comparison}): the +"))
            && body.contains(
                "% improvement of will-it-scale.per_process_ops (open1) of v1 is still there in v2."
            ),
        "{body}"
    );
    // Nothing is answered twice, whatever rounds come.
    lists::round(&app.state).await.unwrap();
    assert_eq!(
        sender.send_due(&app.state).await.unwrap(),
        0,
        "each version answered once"
    );
    assert_eq!(relay.mails().len(), 4);

    // The 2/3 never came: after the wait, incomplete and not tested.
    sqlx::query("UPDATE list_series SET seen_at = now() - interval '1 hour'")
        .execute(&app.pool)
        .await
        .unwrap();
    lists::round(&app.state).await.unwrap();
    let all = series_of(&app, list).await;
    let three = by_subject(&all, "[PATCH 0/3] fs: faster three");
    assert_eq!(three["state"], "incomplete", "{three:#}");
    assert!(
        three["reason"]
            .as_str()
            .unwrap()
            .starts_with("2/3 never arrived"),
        "{three:#}"
    );

    // The pages show each with its reason.
    let page = app.get(&format!("/lists/{list}")).await;
    assert_eq!(page.status, StatusCode::OK);
    for words in ["incomplete", "skipped", "reported", "only mm/memory.c"] {
        assert!(page.body.contains(words), "{words}: {}", page.body);
    }
    let page = app.get(&format!("/series/{id}")).await;
    assert!(
        page.body
            .contains(&format!("patchperf.series.{id}@example.org")),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("[PATCH v2 0/2] fs: faster open"),
        "{}",
        page.body
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_new_version_supersedes_one_still_queued(pool: PgPool) {
    let lab = list_lab(pool, false, json!({})).await;
    let (app, list) = (&lab.app, lab.list);
    hand_in(
        app,
        list,
        "application/mbox",
        &series("s", 1, &["fs/open.c"]),
    )
    .await;
    lists::round(&app.state).await.unwrap();
    let all = post(app, list, &series("s", 2, &["fs/open.c"])).await;
    let v1 = by_subject(&all, "[PATCH 0/1] fs: faster s");
    assert_eq!(v1["state"], "superseded", "{v1:#}");
    let c = app.comparison(v1["comparison_id"].as_i64().unwrap()).await;
    assert_eq!(c["status"], "cancelled", "{c:#}");
    assert_eq!(
        by_subject(&all, "[PATCH v2 0/1] fs: faster s")["state"],
        "queued"
    );
}

/// A version whose measuring has begun when the next is posted is not
/// thrown away: it is finished and answered, and its answer says that a
/// newer version came (issue 40: v1 was cancelled as superseded and never
/// answered).
#[sqlx::test(migrations = "../migrations")]
async fn a_version_being_measured_when_the_next_arrives_is_finished_and_answered(pool: PgPool) {
    let only_open1 = json!({"workload_map": [{"paths": ["fs/**"], "workloads": ["open1"]}]});
    let lab = list_lab(pool, true, only_open1).await;
    let (app, list, machine, config) = (&lab.app, lab.list, lab.machine, &lab.config);
    let relay = lab.relay.as_ref().unwrap();
    let ids = lab.ids.clone();
    hand_in(
        app,
        list,
        "application/mbox",
        &series("s", 1, &["fs/open.c"]),
    )
    .await;
    lists::round(&app.state).await.unwrap();
    let lab = Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids,
    };
    // One of v1's jobs runs: v1 is being measured.
    let job = app.claim(machine).await.expect("v1's first job");
    lab.run(app, machine, &job).await;

    let all = post(app, list, &series("s", 2, &["fs/open.c"])).await;
    let v1 = by_subject(&all, "[PATCH 0/1] fs: faster s").clone();
    assert_eq!(v1["state"], "queued", "{v1:#}");
    assert!(
        v1["reason"].as_str().unwrap().starts_with(
            "v2 was posted while this version was measured: it is finished and answered."
        ),
        "{v1:#}"
    );
    let c = app.comparison(v1["comparison_id"].as_i64().unwrap()).await;
    assert_ne!(c["status"], "cancelled", "{c:#}");
    assert_eq!(
        by_subject(&all, "[PATCH v2 0/1] fs: faster s")["state"],
        "queued"
    );

    lab.drain(app, machine).await;
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    for subject in ["[PATCH 0/1] fs: faster s", "[PATCH v2 0/1] fs: faster s"] {
        assert_eq!(by_subject(&all, subject)["state"], "reported", "{all:#?}");
    }
    let sender = Sender::new(config).unwrap();
    sender.send_due(&app.state).await.unwrap();
    let mails = relay.mails();
    let (_, v1_body) = mails
        .iter()
        .find(|(h, _)| header(h, "in-reply-to") == "<s-v1-0@example.org>")
        .expect("v1 answered in its thread");
    assert!(
        v1_body.contains(
            "v2 of this series was posted while v1 was measured; v2 is measured and answered on its own."
        ),
        "{v1_body}"
    );
    let (_, v2_body) = mails
        .iter()
        .find(|(h, _)| header(h, "in-reply-to") == "<s-v2-0@example.org>")
        .expect("v2 answered in its thread");
    assert!(!v2_body.contains("was posted while"), "{v2_body}");
    // v1 was measured before v2 was answered: v2's answer compares.
    assert!(v2_body.contains("Since v1 (comparison "), "{v2_body}");
}

/// Two machines measure v1 and v2 side by side and v2 is done first: its
/// answer waits for v1's, so that it can say what became of v1's change.
#[sqlx::test(migrations = "../migrations")]
async fn a_version_measured_beside_the_one_before_is_answered_after_it(pool: PgPool) {
    let only_open1 = json!({"workload_map": [{"paths": ["fs/**"], "workloads": ["open1"]}]});
    let lab = list_lab(pool, true, only_open1).await;
    let (app, list, machine, config) = (&lab.app, lab.list, lab.machine, &lab.config);
    let relay = lab.relay.as_ref().unwrap();
    let other = app.register("lab-2").await;
    let played = Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids: lab.ids.clone(),
    };
    post(app, list, &series("s", 1, &["fs/open.c"])).await;
    // lab-1 holds v1's first job; v2 comes and lab-2 measures all of it.
    let job = app.claim(machine).await.expect("v1's first job");
    post(app, list, &series("s", 2, &["fs/open.c"])).await;
    let ran = played.drain(app, other).await;
    assert_eq!(ran.len(), 3, "v2's jobs only: {ran:?}");
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    let v2 = by_subject(&all, "[PATCH v2 0/1] fs: faster s");
    assert_eq!(v2["state"], "queued", "v2 waits for v1: {v2:#}");
    // v1 finishes: both are answered, v2's comparing with v1.
    played.run(app, machine, &job).await;
    played.drain(app, machine).await;
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    for subject in ["[PATCH 0/1] fs: faster s", "[PATCH v2 0/1] fs: faster s"] {
        assert_eq!(by_subject(&all, subject)["state"], "reported", "{all:#?}");
    }
    Sender::new(config)
        .unwrap()
        .send_due(&app.state)
        .await
        .unwrap();
    let mails = relay.mails();
    let (_, v2_body) = mails
        .iter()
        .find(|(h, _)| header(h, "in-reply-to") == "<s-v2-0@example.org>")
        .expect("v2 answered in its thread");
    assert!(v2_body.contains("Since v1 (comparison "), "{v2_body}");
}

/// A robot's patch (Auto-Submitted, Precedence: bulk) and our own mail
/// are not measured at all: no lab time goes to them.
#[sqlx::test(migrations = "../migrations")]
async fn a_robots_series_is_not_measured(pool: PgPool) {
    let lab = list_lab(pool, false, json!({})).await;
    let (app, list) = (&lab.app, lab.list);
    let robot = message(
        "robot@example.org",
        "[PATCH] fs: automated fix",
        None,
        &patch("fs/open.c", "int robot;"),
    )
    .replace(
        "MIME-Version",
        "Auto-Submitted: auto-generated\nMIME-Version",
    );
    let ours = message(
        "ours@example.org",
        "[PATCH] fs: our own",
        None,
        &patch("fs/open.c", "int ours;"),
    )
    .replace(
        &format!("From: {AUTHOR}"),
        "From: patchperf <perf@example.org>",
    );
    for raw in [robot, ours] {
        let a = hand_in(app, list, "message/rfc822", &raw).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
    }
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    for (subject, why) in [
        (
            "[PATCH] fs: automated fix",
            "not measured: it was sent by a robot (Auto-Submitted or bulk)",
        ),
        ("[PATCH] fs: our own", "not measured: it is our own mail"),
    ] {
        let s = by_subject(&all, subject);
        assert_eq!(
            (s["state"].as_str(), s["reason"].as_str()),
            (Some("skipped"), Some(why)),
            "{s:#}"
        );
        assert!(s["comparison_id"].is_null(), "{s:#}");
    }
}

/// A list's series whose comparison is cancelled frees its slot in the
/// same round: the next complete series is queued at once.
#[sqlx::test(migrations = "../migrations")]
async fn a_cancelled_series_frees_its_slot_at_once(pool: PgPool) {
    let lab = list_lab(pool, false, json!({"max_in_flight": 1})).await;
    let (app, list) = (&lab.app, lab.list);
    let mut mbox = series("a", 1, &["fs/open.c"]);
    mbox.push_str(&series("b", 1, &["fs/open.c"]));
    let all = post(app, list, &mbox).await;
    let a = by_subject(&all, "[PATCH 0/1] fs: faster a").clone();
    assert_eq!(a["state"], "queued", "{a:#}");
    assert_eq!(
        by_subject(&all, "[PATCH 0/1] fs: faster b")["state"],
        "waiting"
    );
    let id = a["comparison_id"].as_i64().unwrap();
    let c = app
        .post(
            &format!("/api/v1/comparisons/{id}/cancel"),
            &app.ci,
            json!({}),
        )
        .await;
    assert!(c.status.is_success(), "{c:?}");
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    assert_eq!(
        by_subject(&all, "[PATCH 0/1] fs: faster a")["state"],
        "failed"
    );
    assert_eq!(
        by_subject(&all, "[PATCH 0/1] fs: faster b")["state"],
        "queued",
        "{all:#?}"
    );
}

/// Nobody takes over someone's series (issue 40): a "patch 1/1" another
/// sender posts into the thread with an earlier `Date:` is not measured
/// in place of the author's, and the series says so; a "v2" from another
/// sender with the author's b4 change-id does not supersede v1.
#[sqlx::test(migrations = "../migrations")]
async fn another_sender_cannot_take_over_a_series(pool: PgPool) {
    let lab = list_lab(pool, false, json!({"max_in_flight": 3})).await;
    let (app, list) = (&lab.app, lab.list);
    let mallory = "Mallory <m@evil.example>";
    let forged = message(
        "forged-1@evil.example",
        "[PATCH 1/1] fs: step 1",
        Some("t-v1-0@example.org"),
        &patch("fs/namei.c", "int mallory;"),
    )
    .replace(&format!("From: {AUTHOR}"), &format!("From: {mallory}"))
    .replace(
        "Date: Wed, 2 Dec 2026 10:00:00",
        "Date: Wed, 2 Dec 2026 09:00:00",
    );
    let mut mbox = series("t", 1, &["fs/open.c"]);
    mbox.push_str(&format!("From x Thu Jan  1 00:00:00 1970\n{forged}\n"));
    // b4's change-id on the author's own single patch, and on a "v2"
    // from Mallory.
    let b4 = |id: &str, v: &str, from: &str| {
        message(
            id,
            &format!("[PATCH{v}] fs: b4 open"),
            None,
            &patch("fs/open.c", "int b4;")
                .replace("\n-- \n", "\nchange-id: 20261206-open-0123456789ab\n-- \n"),
        )
        .replace(&format!("From: {AUTHOR}"), &format!("From: {from}"))
    };
    for raw in [
        b4("b4-v1@example.org", "", AUTHOR),
        b4("b4-v2@evil.example", " v2", mallory),
    ] {
        mbox.push_str(&format!("From x Thu Jan  1 00:00:00 1970\n{raw}\n"));
    }
    let a = hand_in(app, list, "application/mbox", &mbox).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    let t = by_subject(&all, "[PATCH 0/1] fs: faster t");
    assert_eq!(t["state"], "queued", "{t:#}");
    assert!(
        t["reason"].as_str().unwrap().contains(
            "Not taken, not being from the series' sender: a patch 1/1 from m@evil.example <forged-1@evil.example>"
        ),
        "{t:#}"
    );
    let mbox = app
        .get(&format!("/comparisons/{}/series.mbox", t["comparison_id"]))
        .await;
    assert!(mbox.body.contains("int step1_v1;"), "{}", mbox.body);
    assert!(!mbox.body.contains("mallory"), "{}", mbox.body);
    let v1 = by_subject(&all, "[PATCH] fs: b4 open");
    assert_eq!(v1["state"], "queued", "{v1:#}");
}

/// A series cross-posted to two followed lists (the subsystem's and
/// LKML) is measured once and answered once, Cc both lists (issue 40: it
/// was measured and answered twice).
#[sqlx::test(migrations = "../migrations")]
async fn a_cross_posted_series_is_measured_and_answered_once(pool: PgPool) {
    const LKML: &str = "linux-kernel@vger.kernel.org";
    let only_open1 = json!({"workload_map": [{"paths": ["fs/**"], "workloads": ["open1"]}]});
    let lab = list_lab(pool, true, only_open1.clone()).await;
    let (app, fsdevel, machine, config) = (&lab.app, lab.list, lab.machine, &lab.config);
    let relay = lab.relay.as_ref().unwrap();
    let ids = lab.ids.clone();
    let mut body = json!({
        "name": "lkml", "address": LKML, "base_url": lab.repo.path().to_str().unwrap(),
        "base_branch": "master", "runs": 3, "report_improvements": true,
    });
    body["workload_map"] = only_open1["workload_map"].clone();
    let a = app.post("/api/v1/lists", &app.ci, body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let lkml = a.json["id"].as_i64().unwrap();
    let mbox = series("x", 1, &["fs/open.c"]).replace(
        "Cc: Al Viro <viro@zeniv.linux.org.uk>",
        &format!("Cc: Al Viro <viro@zeniv.linux.org.uk>, {LKML}"),
    );
    for list in [fsdevel, lkml] {
        let a = hand_in(app, list, "application/mbox", &mbox).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
    }
    lists::round(&app.state).await.unwrap();
    let first = &series_of(app, fsdevel).await[0];
    assert_eq!(first["state"], "queued", "{first:#}");
    let second = &series_of(app, lkml).await[0];
    assert_eq!(second["state"], "skipped", "{second:#}");
    assert_eq!(
        second["reason"],
        format!(
            "cross-posted: measured and answered once, as series {} of linux-fsdevel",
            first["id"]
        )
    );
    assert!(second["comparison_id"].is_null());

    Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids,
    }
    .drain(app, machine)
    .await;
    lists::round(&app.state).await.unwrap();
    Sender::new(config)
        .unwrap()
        .send_due(&app.state)
        .await
        .unwrap();
    let answers: Vec<_> = relay
        .mails()
        .into_iter()
        .filter(|(h, _)| header(h, "in-reply-to") == "<x-v1-0@example.org>")
        .collect();
    // One mail, its recipients each sent a copy by the relay.
    let ids: std::collections::HashSet<&str> = answers
        .iter()
        .map(|(h, _)| header(h, "message-id"))
        .collect();
    assert_eq!(ids.len(), 1, "{answers:#?}");
    let cc = header(&answers[0].0, "cc");
    assert!(cc.contains(LIST) && cc.contains(LKML), "{cc}");
}

/// Mail handed in is bounded per token (and in all): a token already
/// storing an mbox is told to come back (429, `Retry-After`) instead of
/// taking more of the pool that runner claims and pages need (issue 40:
/// 22 concurrent 10,000-message mboxes exhausted it).
#[sqlx::test(migrations = "../migrations")]
async fn a_token_stores_one_mbox_at_a_time(pool: PgPool) {
    let lab = list_lab(pool, false, json!({})).await;
    let (app, list) = (&lab.app, lab.list);
    let ci: i64 = sqlx::query_scalar("SELECT id FROM tokens WHERE kind = 'ci' ORDER BY id LIMIT 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let mbox = series("q", 1, &["fs/open.c"]);
    let storing = app.state.intake.enter(ci).unwrap();
    let a = hand_in(app, list, "application/mbox", &mbox).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{a:?}");
    assert_eq!(a.headers["retry-after"], "5");
    assert_eq!(
        a.error(),
        "mail handed in: this token already has 1 running, the most one token may at once: \
         try again in 5 s"
    );
    drop(storing);
    let a = hand_in(app, list, "application/mbox", &mbox).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
}

#[sqlx::test(migrations = "../migrations")]
async fn hostile_mail_is_refused_at_the_door_and_the_rest_goes_on(pool: PgPool) {
    let lab = list_lab(pool, false, json!({})).await;
    let (app, list) = (&lab.app, lab.list);
    let a = hand_in(app, list, "application/json", "{}").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    let a = hand_in(app, list, "message/rfc822", "   \n").await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    let no_id = "From: a@example.org\nSubject: [PATCH] x\n\nbody\n";
    let a = hand_in(app, list, "message/rfc822", no_id).await;
    assert_eq!(
        a.json["refused"],
        json!(["message 1: it has no Message-ID"]),
        "{a:?}"
    );
    // A subject and an author that try to add headers to the reply.
    let evil = message(
        "evil@example.org",
        "[PATCH] fs: x\r\nBcc: victim@example.org",
        None,
        &patch("fs/open.c", "int evil;"),
    )
    .replace(
        &format!("From: {AUTHOR}"),
        "From: =?utf-8?q?Mallory=0D=0ABcc=3A_victim=40example=2Eorg?= <m@example.org>",
    );
    let a = hand_in(app, list, "message/rfc822", &evil).await;
    assert_eq!(a.json["taken"], 1, "{a:?}");
    lists::round(&app.state).await.unwrap();
    let all = series_of(app, list).await;
    assert_eq!(all.len(), 1, "{all:#?}");
    let s = &all[0];
    assert!(
        !s["subject"].as_str().unwrap().contains(['\r', '\n']),
        "{s:#}"
    );
    // The name's encoded CR LF is no header: one line, before the address.
    assert_eq!(
        s["author"],
        "Mallory Bcc: victim@example.org <m@example.org>"
    );
    // Another list's token-less reader cannot hand in mail.
    let a = app
        .send(
            Method::POST,
            &format!("/api/v1/lists/{list}/messages"),
            None,
            &[("content-type", "message/rfc822".into())],
            Some(axum::body::Body::from(evil)),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrations = "../migrations")]
async fn lists_are_checked_added_by_ci_and_removed_by_an_admin(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let (repo, _) = linear(0);
    let url = repo.path().to_str().unwrap().to_string();
    let bad = [
        json!({"name": "x", "address": LIST}),
        json!({"name": "x", "address": "not an address", "base_url": url, "base_branch": "master"}),
        json!({"name": "x", "address": LIST, "tree": "no-such-tree"}),
        json!({"name": "x", "address": LIST, "base_url": url, "base_branch": "master", "paths": []}),
    ];
    for body in bad {
        let a = app.post("/api/v1/lists", &app.ci, body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {a:?}");
    }
    let ok = json!({"name": "fsdevel", "address": LIST, "base_url": url, "base_branch": "master"});
    let a = app.post("/api/v1/lists", &app.runner, ok.clone()).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let a = app.post("/api/v1/lists", &app.ci, ok.clone()).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json["paths"][0], "fs/**");
    let id = a.json["id"].as_i64().unwrap();
    let a = app.post("/api/v1/lists", &app.ci, ok).await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    let a = app
        .send(
            Method::DELETE,
            &format!("/api/v1/lists/{id}"),
            Some(&app.ci),
            &[],
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let a = app
        .send(
            Method::DELETE,
            &format!("/api/v1/lists/{id}"),
            Some(&app.admin),
            &[],
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get("/api/v1/lists").await.json["lists"], json!([]));
}

/// A user and password in a list's archive or base URL are the list's
/// secret: anonymous readers (the API without a token, the pages) see the
/// URLs without them; a ci or admin token sees them whole.
#[sqlx::test(migrations = "../migrations")]
async fn credentials_in_a_lists_urls_are_shown_only_to_ci_and_admin(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let body = json!({
        "name": "fsdevel", "address": LIST,
        "archive_url": "https://bot:arch1ve-s3cret@lore.example.org/linux-fsdevel",
        "base_url": "https://bot:base-s3cret@git.example.org/vfs.git", "base_branch": "master",
    });
    let a = app.post("/api/v1/lists", &app.ci, body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["id"].as_i64().unwrap();
    for path in [
        format!("/api/v1/lists/{id}"),
        "/api/v1/lists".to_string(),
        format!("/lists/{id}"),
        "/lists".to_string(),
    ] {
        let a = app.get(&path).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
        assert!(!a.body.contains("s3cret"), "{path}: {}", a.body);
        assert!(
            a.body.contains("lore.example.org/linux-fsdevel"),
            "{path}: {}",
            a.body
        );
    }
    // A replied series links its reply in the archive, without them.
    let series: i64 = sqlx::query_scalar(
        "INSERT INTO list_series (list_id, thread_root, anchor, series_key, version, total,
                                  subject, title, author, state, reply_message_id)
         VALUES ($1, 'r@x', 'r@x', 'k', 1, 1, '[PATCH] fs: x', 'fs: x', 'a <a@x>', 'reported',
                 'patchperf.series.1@example.org')
         RETURNING id",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let page = app.get(&format!("/series/{series}")).await.body;
    assert!(!page.contains("s3cret"), "{page}");
    assert!(
        page.contains(
            "href=\"https://lore.example.org/linux-fsdevel/patchperf.series.1@example.org/\""
        ),
        "{page}"
    );
    let a = app.get(&format!("/api/v1/lists/{id}")).await;
    assert_eq!(
        a.json["archive_url"],
        "https://lore.example.org/linux-fsdevel"
    );
    assert!(
        a.json["base"]
            .as_str()
            .unwrap()
            .contains("https://git.example.org/vfs.git")
    );
    let a = app
        .send(
            Method::GET,
            &format!("/api/v1/lists/{id}"),
            Some(&app.ci),
            &[],
            None,
        )
        .await;
    assert_eq!(
        a.json["archive_url"],
        "https://bot:arch1ve-s3cret@lore.example.org/linux-fsdevel"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_new_version_measures_again_what_the_last_one_moved(pool: PgPool) {
    let map = json!({"workload_map": [
        {"paths": ["fs/open.c"], "workloads": ["open1"]},
        {"paths": ["fs/file.c"], "workloads": ["dup1"]},
    ]});
    let lab = list_lab(pool, false, map).await;
    let (app, list, machine) = (&lab.app, lab.list, lab.machine);
    let all = post(app, list, &series("m", 1, &["fs/open.c"])).await;
    let v1 = by_subject(&all, "[PATCH 0/1] fs: faster m").clone();
    assert_eq!(v1["state"], "queued");
    // v1 makes open1 faster.
    let played = Lab {
        culprit: Some(1),
        broken: Vec::new(),
        ids: lab.ids.clone(),
    };
    // Once a runner holds one of its jobs, its page says it is measured,
    // and how far it is, not "queued".
    let page = app.get(&format!("/series/{}", v1["id"])).await.body;
    assert!(page.contains("state-queued"), "{page}");
    let job = app.claim(machine).await.expect("v1's first job");
    let page = app.get(&format!("/series/{}", v1["id"])).await.body;
    assert!(
        page.contains("<dd class=\"state-measuring\">measuring: job 1 of 3 claimed"),
        "{page}"
    );
    assert!(!page.contains("state-queued"), "{page}");
    played.run(app, machine, &job).await;
    played.drain(app, machine).await;
    lists::round(&app.state).await.unwrap();

    // v2 touches fs/file.c alone, yet open1 is measured again: its
    // answer is to say whether v1's change is still there.
    let all = post(app, list, &series("m", 2, &["fs/file.c"])).await;
    let v2 = by_subject(&all, "[PATCH v2 0/1] fs: faster m");
    assert_eq!(v2["state"], "queued", "{v2:#}");
    let c = app.comparison(v2["comparison_id"].as_i64().unwrap()).await;
    assert_eq!(c["workloads"], json!(["dup1", "open1"]), "{c:#}");
    let reason = v2["reason"].as_str().unwrap();
    assert!(
        reason.ends_with(
            "Measured on dup1: the workloads the list's rules give the files it changes. Also \
             measured: open1, which v1 moved, to tell whether that change is still there."
        ),
        "{reason}"
    );
}
