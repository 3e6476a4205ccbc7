//! Issue 25 for real: a mailing list followed through its public-inbox
//! archive (written by ezpi, served by `public-inbox-httpd` as lore serves
//! one), its series measured on real kernels under tcg-icount and answered
//! in their threads at a real SMTP server (aiosmtpd). Among unrelated
//! traffic the archive holds seed 002 posted as a single patch, a two-patch
//! VFS series (seeds 003 and 004 as 1/2 and 2/2, with a cover letter) and
//! its v2, posted while v1 is being measured (both are answered), a review
//! of 1/2, a patch outside the list's paths and a
//! three-patch series whose 2/3 never comes. The server reads the archive
//! when the list is added (the poll), then through the hook; exactly three
//! replies go out, each `In-Reply-To` its cover letter or single patch;
//! none for the review, the filtered patch or the incomplete series (each
//! on the list's page with its reason), and none again after a restart.
//!
//! Shares the kernel tests' cache and takes turns with them
//! (`kernel_support`).

mod kernel_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use patchperf_common::protocol::FinishRequest;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_server::{AppState, Config};
use patchperf_testkit::git_fixture::{self, patches_dir};
use patchperf_testkit::public_inbox::Archive;
use patchperf_testkit::smtp::{Relay, header};
use patchperf_testkit::{TestServer, free_port, token};
use serde_json::{Value, json};

use kernel_support::{
    assert_no_leftovers, exclusive, get_json, history_or_skip, load, run_agent_until_idle,
    skip_without_tools,
};

const LIST: &str = "linux-fsdevel@vger.kernel.org";

/// A message of the list: `From:` as given, our Message-ID, subject and
/// thread, then `body`.
fn mail(from: &str, id: &str, subject: &str, parent: Option<&str>, body: &str) -> Vec<u8> {
    let thread = parent.map_or(String::new(), |p| {
        format!("In-Reply-To: <{p}>\nReferences: <{p}>\n")
    });
    format!(
        "From: {from}\nTo: {LIST}\nSubject: {subject}\nDate: Wed, 2 Dec 2026 10:00:00 +0000\n\
         Message-ID: <{id}>\n{thread}MIME-Version: 1.0\n\
         Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n{body}"
    )
    .into_bytes()
}

/// The author and the body (message, `---`, diffstat, diff) of the seed
/// patch whose file starts with `prefix`, as `git format-patch` wrote it.
fn seed(prefix: &str) -> (String, String) {
    let dir = patches_dir();
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let (headers, body) = text.split_once("\n\n").unwrap();
    let from = headers
        .lines()
        .find_map(|l| l.strip_prefix("From: "))
        .unwrap()
        .to_string();
    (from, body.to_string())
}

/// A made-up patch of `file`: never built, its series is filtered or
/// incomplete.
fn made_up(file: &str) -> String {
    format!(
        "A change.\n\nSigned-off-by: A U Thor <author@example.org>\n---\n {file} | 1 +\n\n\
         diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1 +1,2 @@\n x\n+y\n"
    )
}

/// The cover letter and patches 1/2, 2/2 of the VFS series, version `v`:
/// the same code in both versions (v2 rewords the cover letter).
fn vfs_series(v: u32) -> Vec<Vec<u8>> {
    let prefix = if v == 1 {
        "PATCH".into()
    } else {
        format!("PATCH v{v}")
    };
    let cover = format!("vfs-v{v}-0@example.org");
    let me = "Kernel Hacker <kh@example.org>";
    let mut out = vec![mail(
        me,
        &cover,
        &format!("[{prefix} 0/2] vfs: cheaper fstat and alloc_fd"),
        None,
        &format!("Version {v}: two backports.\n\nKernel Hacker (2):\n  vfs: fstat\n  fs/file.c\n"),
    )];
    for (k, (seed_prefix, title)) in [
        (
            "003",
            "vfs: mostly undo glibc turning 'fstat()' into 'fstatat(AT_EMPTY_PATH)'",
        ),
        (
            "004",
            "fs/file.c: remove sanity_check and add likely/unlikely in alloc_fd()",
        ),
    ]
    .iter()
    .enumerate()
    {
        let (author, body) = seed(seed_prefix);
        // Sent by the series' author, written by the seed's: the body's
        // `From:` line names who `git am` records.
        let body = format!("From: {author}\n\n{body}");
        out.push(mail(
            me,
            &format!("vfs-v{v}-{}@example.org", k + 1),
            &format!("[{prefix} {}/2] {title}", k + 1),
            Some(&cover),
            &body,
        ));
    }
    out
}

/// Every message of the aiosmtpd Maildir, one per Message-ID: (its
/// In-Reply-To, subject, body).
fn replies(relay: &Relay) -> BTreeMap<String, (String, String, String)> {
    relay
        .mails()
        .into_iter()
        .map(|(h, body)| {
            (
                header(&h, "message-id").to_string(),
                (
                    header(&h, "in-reply-to").to_string(),
                    header(&h, "subject").to_string(),
                    body,
                ),
            )
        })
        .collect()
}

/// Waits up to `limit` for `done`, saying how long it took.
fn wait(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "{what}: {:.1} s, load {}",
        started.elapsed().as_secs_f64(),
        load()
    );
}

fn series_by_subject(url: &str, ci: &str, list: i64) -> BTreeMap<String, Value> {
    let all = get_json(url, ci, &format!("/api/v1/series?list={list}"));
    all["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["subject"].as_str().unwrap().to_string(), s.clone()))
        .collect()
}

/// What both list tests stand on: Debian's 6.1 as a git history for the
/// list's base, an SMTP relay, an empty public-inbox archive served on
/// loopback, and a server reading it and mailing through the relay, with
/// a runner and a CI token. The scratch directory goes last.
struct ListLab {
    history: git_fixture::LinuxHistory,
    relay: std::sync::Arc<Relay>,
    archive: Archive,
    served: patchperf_testkit::public_inbox::Served,
    mirrors: std::path::PathBuf,
    state: AppState,
    server: TestServer,
    runner: String,
    ci: String,
    url: String,
    _dir: tempfile::TempDir,
}

impl ListLab {
    /// The lab, or `None` after saying why the test skips.
    async fn start(pool: &sqlx::PgPool) -> Option<ListLab> {
        let history = history_or_skip(git_fixture::linux_history(&[]))?;
        let dir = tempfile::tempdir().unwrap();
        let relay = std::sync::Arc::new(Relay::start(free_port(), dir.path()));
        let archive = Archive::create(dir.path(), "linux-fsdevel", LIST);
        let served = archive.serve();
        let mirrors = dir.path().join("mirrors");
        let state = AppState::new(pool.clone(), config(&mirrors, relay.port));
        let server = TestServer::serve(state.clone(), "127.0.0.1:0".parse().unwrap()).await;
        let (runner, ci) = (
            token(pool, TokenKind::Runner).await,
            token(pool, TokenKind::Ci).await,
        );
        let url = server.url();
        Some(ListLab {
            history,
            relay,
            archive,
            served,
            mirrors,
            state,
            server,
            runner,
            ci,
            url,
            _dir: dir,
        })
    }
}

fn config(mirrors: &std::path::Path, smtp_port: u16) -> Config {
    Config {
        local_git: true,
        allow_private_destinations: true,
        git_dir: mirrors.to_path_buf(),
        public_url: Some("https://perf.example.org/".into()),
        smtp_url: Some(format!("smtp://127.0.0.1:{smtp_port}")),
        mail_from: Some("patchperf <perf@example.org>".into()),
        outbox_retry: Duration::ZERO,
        ..Config::default()
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_list_is_read_measured_and_answered_in_its_threads(pool: sqlx::PgPool) {
    skip_without_tools!();
    let Some(lab) = ListLab::start(&pool).await else {
        return;
    };
    let ListLab {
        history,
        relay,
        archive,
        served,
        mirrors,
        state,
        server,
        runner,
        ci,
        url,
        _dir,
    } = lab;

    // What the list holds before it is followed.
    let chat = "Dev Eloper <dev@example.org>";
    archive.add(&mail(
        chat,
        "lsf@example.org",
        "LSF/MM: VFS topics",
        None,
        "Ideas?\n",
    ));
    let (author_002, body_002) = seed("002");
    archive.add(&mail(
        &author_002,
        "fput-sync@example.org",
        "[PATCH] fs: use __fput_sync in close(2)",
        None,
        &body_002,
    ));
    archive.add(&mail(
        chat,
        "lsf-re@example.org",
        "Re: LSF/MM: VFS topics",
        Some("lsf@example.org"),
        "> Ideas?\n\nmount API.\n",
    ));
    for m in vfs_series(1) {
        archive.add(&m);
    }
    archive.add(&mail(
        "Jan Kara <jack@suse.cz>",
        "review@example.org",
        "Re: [PATCH 1/2] vfs: mostly undo glibc turning 'fstat()' into 'fstatat(AT_EMPTY_PATH)'",
        Some("vfs-v1-1@example.org"),
        "Looks good.\n\nReviewed-by: Jan Kara <jack@suse.cz>\n",
    ));
    archive.add(&mail(
        "Mm Hacker <mm@example.org>",
        "mm@example.org",
        "[PATCH] mm: read-ahead a little less",
        None,
        &made_up("mm/readahead.c"),
    ));
    let three = "three-0@example.org";
    archive.add(&mail(
        chat,
        three,
        "[PATCH 0/3] fs: three steps",
        None,
        "Three.\n",
    ));
    for k in [1, 3] {
        archive.add(&mail(
            chat,
            &format!("three-{k}@example.org"),
            &format!("[PATCH {k}/3] fs: step {k}"),
            Some(three),
            &made_up(&format!("fs/step{k}.c")),
        ));
    }

    let (list, mut timings) = {
        let (url, ci) = (url.clone(), ci.clone());
        let (archive_url, base_url) = (served.url.clone(), history.url());
        tokio::task::spawn_blocking(move || {
            let _exclusive = exclusive();
            let started = Instant::now();
            let list: Value = ureq::post(&format!("{url}/api/v1/lists"))
                .header("authorization", &format!("Bearer {ci}"))
                .send_json(json!({
                    "name": "linux-fsdevel",
                    "address": LIST,
                    "archive_url": archive_url,
                    "read_history": true,
                    "base_url": base_url,
                    "base_branch": "master",
                    "workload_map": [
                        {"paths": ["fs/open.c", "fs/file_table.c"], "workloads": ["open1"]},
                        {"paths": ["fs/stat.c"], "workloads": ["fstatat-empty"]},
                        {"paths": ["fs/file.c"], "workloads": ["dup1"]},
                    ],
                    "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
                    "runs": 3,
                    "backend": "tcg-icount",
                    "report_improvements": true,
                    "wait_minutes": 0,
                    // Read when added, then only through the hook: the
                    // test may wait long for the kernel cache.
                    "poll_minutes": 1440,
                }))
                .unwrap()
                .body_mut()
                .read_json()
                .unwrap();
            let list = list["id"].as_i64().unwrap();
            let mut timings = Vec::new();
            // Adding the list reads the archive at once (the poll), which
            // queues seed 002 and v1.
            wait(
                "archive read, series queued",
                Duration::from_secs(120),
                || {
                    let s = series_by_subject(&url, &ci, list);
                    s.values().filter(|s| s["state"] == "queued").count() == 2
                },
            );
            timings.push((
                "list added → archive read → 2 series queued",
                started.elapsed(),
            ));
            (list, timings)
        })
        .await
        .unwrap()
    };

    // v2 lands in the archive now, but the server reads it only when the
    // hook is called: while v1 is being measured.
    for m in vfs_series(2) {
        archive.add(&m);
    }
    let later = {
        let (url, ci, runner, relay) = (url.clone(), ci.clone(), runner.clone(), relay.clone());
        tokio::task::spawn_blocking(move || {
            let _exclusive = exclusive();
            let measuring = Instant::now();
            // Set when the hook's thread ends: v2 is queued (or it failed).
            let v2_queued = std::sync::atomic::AtomicBool::new(false);
            let (finishes, hook) = std::thread::scope(|scope| {
                let hook = scope.spawn(|| {
                    // Ends the agent's wait however this thread ends: a
                    // panic here must fail the test, not leave it running.
                    struct Ended<'a>(&'a std::sync::atomic::AtomicBool);
                    impl Drop for Ended<'_> {
                        fn drop(&mut self) {
                            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                    let _ended = Ended(&v2_queued);
                    let v1_running = || {
                        let v1 = series_by_subject(&url, &ci, list)
                            ["[PATCH 0/2] vfs: cheaper fstat and alloc_fd"]
                            .clone();
                        v1["comparison_id"].as_i64().is_some_and(|id| {
                            let c = get_json(&url, &ci, &format!("/api/v1/comparisons/{id}"));
                            c["status"] == "running"
                        })
                    };
                    wait("v1 being measured", Duration::from_secs(1800), v1_running);
                    let posted = Instant::now();
                    let pushed: Value = ureq::post(&format!("{url}/api/v1/lists/{list}/push"))
                        .header("authorization", &format!("Bearer {ci}"))
                        .send_json(json!({}))
                        .unwrap()
                        .body_mut()
                        .read_json()
                        .unwrap();
                    assert_eq!(pushed["messages"], 3, "{pushed}");
                    // Read beside the two guests measuring v1: slower than
                    // on an idle machine (1 s).
                    wait("v2 queued", Duration::from_secs(300), || {
                        series_by_subject(&url, &ci, list)
                            .get("[PATCH v2 0/2] vfs: cheaper fstat and alloc_fd")
                            .is_some_and(|s| s["state"] == "queued")
                    });
                    (posted, posted.elapsed())
                });
                // The agent goes on until v2, posted meanwhile, is measured
                // too.
                let finishes = kernel_support::run_agent_while(&url, &runner, "list-test", || {
                    !v2_queued.load(std::sync::atomic::Ordering::SeqCst)
                });
                (finishes, hook.join().unwrap())
            });
            for f in &finishes {
                assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
            }
            let (hook, queued) = hook;
            let mut timings = vec![("hook (v1 being measured) → v2 read and queued", queued)];
            timings.push((
                "queued → measured (seed 002, v1 patch by patch, then v2)",
                measuring.elapsed(),
            ));
            let answering = Instant::now();
            wait("three replies", Duration::from_secs(120), || {
                replies(&relay).len() == 3
            });
            timings.push(("measured → replies at the SMTP server", answering.elapsed()));
            timings.push((
                "v2 posted (v1 being measured) → every reply at the SMTP server",
                hook.elapsed(),
            ));
            assert_no_leftovers();
            timings
        })
        .await
        .unwrap()
    };
    timings.extend(later);
    for (what, took) in &timings {
        eprintln!("{what}: {:.0} s", took.as_secs_f64());
    }

    let replies = replies(&relay);
    assert_eq!(replies.len(), 3, "{:#?}", replies.keys());
    let by_thread: BTreeMap<&str, &(String, String, String)> =
        replies.values().map(|r| (r.0.as_str(), r)).collect();
    let (_, subject, body) = by_thread["<fput-sync@example.org>"];
    assert_eq!(subject, "Re: [PATCH] fs: use __fput_sync in close(2)");
    assert!(
        body.contains("patchperf noticed a +")
            && body.contains("% improvement of will-it-scale.per_process_ops (open1) on:"),
        "{body}"
    );
    eprintln!("seed 002's reply:\n{body}");
    let (_, subject, body) = by_thread["<vfs-v1-0@example.org>"];
    assert_eq!(subject, "Re: [PATCH 0/2] vfs: cheaper fstat and alloc_fd");
    assert!(body.contains("The change comes with patch "), "{body}");
    // Each change names the patch that made it: fstatat-empty patch 1,
    // dup1 patch 2.
    let table = body
        .split("Each change and the patch that made it:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{body}"));
    let lines: Vec<&str> = table.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  fstatat-empty · nr_task 1")
                && l.contains("improvement")
                && l.contains("patch 1/2 (\"vfs: mostly undo")),
        "{body}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  dup1 · nr_task 1") && l.contains("patch 2/2 (")),
        "{body}"
    );
    // v2 came while v1 was being measured: v1 is answered all the same.
    assert!(
        body.contains(
            "v2 of this series was posted while v1 was measured; v2 is measured and answered on \
             its own."
        ),
        "{body}"
    );
    let (_, subject, body) = by_thread["<vfs-v2-0@example.org>"];
    assert_eq!(
        subject,
        "Re: [PATCH v2 0/2] vfs: cheaper fstat and alloc_fd"
    );
    let v1_body = &by_thread["<vfs-v1-0@example.org>"].2;
    assert!(
        body.contains("Since v1 (comparison "),
        "{body}\n\nv1's reply:\n{v1_body}"
    );
    // Its reports name the series by its cover letter, each change by the
    // patch that made it, and the base by a short commit, never the
    // server's path to its repository.
    assert!(
        body.contains("series: [PATCH v2 0/2] vfs: cheaper fstat and alloc_fd\n"),
        "{body}"
    );
    assert!(body.contains("\nfrom: patch 1/2 “"), "{body}");
    assert!(
        !body.contains("file://") && !body.contains("/var/"),
        "{body}"
    );
    eprintln!("v2's reply:\n{body}");

    // Nothing for the review, the filtered patch, the incomplete series:
    // each on the list's page with its reason.
    // Read off the runtime the server answers on (a blocking call on it
    // would leave the server no thread to answer with).
    let (series, page, v2_page) = {
        let (url, ci) = (url.clone(), ci.clone());
        tokio::task::spawn_blocking(move || {
            let read = |path: &str| {
                ureq::get(&format!("{url}{path}"))
                    .call()
                    .unwrap()
                    .body_mut()
                    .read_to_string()
                    .unwrap()
            };
            let page = read(&format!("/lists/{list}"));
            let series = series_by_subject(&url, &ci, list);
            let v2 = &series["[PATCH v2 0/2] vfs: cheaper fstat and alloc_fd"];
            let v2_page = read(&format!("/series/{}", v2["id"]));
            (series, page, v2_page)
        })
        .await
        .unwrap()
    };
    // v2's page answers first, and links its reply where the list's
    // archive keeps it.
    let v2 = &series["[PATCH v2 0/2] vfs: cheaper fstat and alloc_fd"];
    let reply = v2["reply_message_id"].as_str().unwrap();
    assert!(
        v2_page.contains(&format!(
            "<a href=\"{}/{reply}/\">&lt;{reply}&gt;</a> in the list's archive",
            served.url.trim_end_matches('/')
        )),
        "{v2_page}"
    );
    assert!(
        v2_page.contains("<strong class=\"verdict\">improvement</strong>: +9")
            && v2_page.contains("of will-it-scale.per_process_ops on fstatat-empty"),
        "{v2_page}"
    );
    assert!(v2_page.contains("from patch 1/2 “"), "{v2_page}");
    assert_eq!(series.len(), 5, "{:#?}", series.keys());
    let state_of = |s: &str| series[s]["state"].as_str().unwrap().to_string();
    assert_eq!(state_of("[PATCH] mm: read-ahead a little less"), "skipped");
    assert_eq!(state_of("[PATCH 0/3] fs: three steps"), "incomplete");
    assert_eq!(
        state_of("[PATCH] fs: use __fput_sync in close(2)"),
        "reported"
    );
    assert_eq!(
        state_of("[PATCH 0/2] vfs: cheaper fstat and alloc_fd"),
        "reported"
    );
    assert_eq!(
        state_of("[PATCH v2 0/2] vfs: cheaper fstat and alloc_fd"),
        "reported"
    );
    assert!(page.contains("touches none of"), "{page}");
    assert!(page.contains("2/3 never arrived"), "{page}");

    // A restart: the new server's reader answers nothing again.
    server.stop().await;
    state.begin_shutdown();
    let state = AppState::new(pool.clone(), config(&mirrors, relay.port));
    let server = TestServer::serve(state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    patchperf_server::domain::lists::round(&state)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        relay.mails().len(),
        replies_sent(&replies),
        "nothing sent twice"
    );
    server.stop().await;
    state.begin_shutdown();
}

/// Mails the relay received for `replies`: each reply goes to its author
/// and the list.
fn replies_sent(replies: &BTreeMap<String, (String, String, String)>) -> usize {
    replies.len() * 2
}

/// One single-patch series of `runner/tests/fixtures/fs-series/NAME.patch`
/// (its first line the subject), as Kernel Hacker posts it.
fn fs_patch(name: &str) -> (String, String) {
    let path = format!(
        "{}/tests/fixtures/fs-series/{name}.patch",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (subject, body) = text.split_once("\n\n").unwrap();
    let subject = subject.strip_prefix("Subject: ").unwrap();
    (format!("[PATCH] {subject}"), body.to_string())
}

/// Issue 39 for real: a list that names no workload map measures each
/// series on the workloads the map derived from profiles gives the files
/// (and, where its hunks name them, the functions) it changes. Six
/// single-patch series (a line each, but for the locks one, which takes
/// 25 lines out), one each in `fs/select.c`, `fs/pipe.c`,
/// `fs/read_write.c` (in `generic_file_llseek_size()`), `fs/locks.c`,
/// `fs/eventfd.c` and the unlink path of `fs/namei.c`, posted to a
/// public-inbox archive, are each queued on its family's workloads; a
/// series touching only `fs/ext4/inode.c`, which no workload runs, is
/// skipped, saying so. The locks and unlink series are measured on real
/// kernels and the locks one (upstream's lock1 regression of 2020) is
/// answered, naming what it was measured on; the other four are
/// cancelled once queued: measuring all six costs ten minutes on 2 CPUs
/// (BENCHMARKS.md, "A mailing list end to end").
#[sqlx::test(migrations = "../migrations")]
async fn a_list_measures_each_fs_series_on_the_workloads_that_run_it(pool: sqlx::PgPool) {
    skip_without_tools!();
    let Some(lab) = ListLab::start(&pool).await else {
        return;
    };
    let ListLab {
        history,
        relay,
        archive,
        served,
        mirrors: _,
        state,
        server,
        runner,
        ci,
        url,
        _dir,
    } = lab;
    // Each family: the fixture, the workloads its series may be measured
    // on (what runs that file or function), and whether it is measured.
    let families: [(&str, &[&str], bool); 6] = [
        ("select", &["poll1", "poll2"], false),
        ("pipe", &["pipe1"], false),
        ("read_write", &["lseek1", "lseek2"], false),
        ("locks", &["lock1", "lock2"], true),
        ("eventfd", &["eventfd1"], false),
        ("unlink", &["unlink1", "unlink2"], true),
    ];
    let me = "Kernel Hacker <kh@example.org>";
    let mut subjects = BTreeMap::new();
    for name in families.iter().map(|(n, ..)| *n).chain(["ext4"]) {
        let (subject, body) = fs_patch(name);
        archive.add(&mail(
            me,
            &format!("{name}@example.org"),
            &subject,
            None,
            &body,
        ));
        subjects.insert(name, subject);
    }

    let (series, queued, reports, page) = {
        let (url, ci, runner, relay) = (url.clone(), ci.clone(), runner.clone(), relay.clone());
        let (archive_url, base_url) = (served.url.clone(), history.url());
        let subjects = subjects.clone();
        tokio::task::spawn_blocking(move || {
            let _exclusive = exclusive();
            let list: Value = ureq::post(&format!("{url}/api/v1/lists"))
                .header("authorization", &format!("Bearer {ci}"))
                .send_json(json!({
                    "name": "linux-fsdevel",
                    "address": LIST,
                    "archive_url": archive_url,
                    "read_history": true,
                    "base_url": base_url,
                    "base_branch": "master",
                    "params": { "nr_task": [1], "seconds": 1, "warmup_seconds": 1 },
                    "runs": 3,
                    "report_improvements": true,
                    "wait_minutes": 0,
                    "max_in_flight": 10,
                    "poll_minutes": 1440,
                }))
                .unwrap()
                .body_mut()
                .read_json()
                .unwrap();
            let list = list["id"].as_i64().unwrap();
            assert_eq!(list_view(&url, &ci, list)["workload_map"], json!([]));
            wait(
                "archive read, six series queued",
                Duration::from_secs(120),
                || {
                    let s = series_by_subject(&url, &ci, list);
                    s.values().filter(|s| s["state"] == "queued").count() == 6
                },
            );
            // What each series was queued on, before any is measured.
            let series = series_by_subject(&url, &ci, list);
            let mut queued = BTreeMap::new();
            for (name, subject) in &subjects {
                if let Some(id) = series[subject]["comparison_id"].as_i64() {
                    let view = get_json(&url, &ci, &format!("/api/v1/comparisons/{id}"));
                    queued.insert(name.to_string(), (id, view));
                }
            }
            for (name, _, measured) in families {
                if !measured {
                    let id = queued[name].0;
                    ureq::post(&format!("{url}/api/v1/comparisons/{id}/cancel"))
                        .header("authorization", &format!("Bearer {ci}"))
                        .send_json(json!({}))
                        .unwrap();
                }
            }
            let started = Instant::now();
            let finishes = run_agent_until_idle(&url, &runner, "fs-series-test");
            assert_eq!(finishes.len(), 6, "three jobs each of two comparisons");
            for f in &finishes {
                assert!(matches!(f, FinishRequest::Done { .. }), "{f:?}");
            }
            eprintln!(
                "the locks and unlink series measured: {:.0} s, load {}",
                started.elapsed().as_secs_f64(),
                load()
            );
            wait("the locks series' reply", Duration::from_secs(120), || {
                !replies(&relay).is_empty()
            });
            // A series is marked measured by the list's worker after its
            // comparison ends, one series after another: the reply to one
            // says nothing yet of the other's state.
            wait(
                "the measured series marked so",
                Duration::from_secs(120),
                || {
                    let s = series_by_subject(&url, &ci, list);
                    families
                        .iter()
                        .filter(|(_, _, measured)| *measured)
                        .all(|(name, _, _)| {
                            let state = &s[&subjects[name]]["state"];
                            state == "measured" || state == "reported"
                        })
                },
            );
            let mut reports = BTreeMap::new();
            for (name, (id, _)) in &queued {
                let text = ureq::get(&format!("{url}/api/v1/comparisons/{id}/report.txt"))
                    .header("authorization", &format!("Bearer {ci}"))
                    .call()
                    .unwrap()
                    .body_mut()
                    .read_to_string()
                    .unwrap();
                let view = get_json(&url, &ci, &format!("/api/v1/comparisons/{id}"));
                reports.insert(name.clone(), (view, text));
            }
            let page = ureq::get(&format!("{url}/lists/{list}"))
                .call()
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap();
            assert_no_leftovers();
            (series_by_subject(&url, &ci, list), queued, reports, page)
        })
        .await
        .unwrap()
    };

    for (name, family, measured) in families {
        let (_, view) = &queued[name];
        let workloads: Vec<&str> = view["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        eprintln!("{name}: queued on {workloads:?}");
        assert!(!workloads.is_empty(), "{name}");
        assert!(
            workloads.iter().all(|w| family.contains(w)),
            "{name}: {workloads:?}, not only {family:?}"
        );
        let (view, report) = &reports[name];
        let state = series[&subjects[name]]["state"]
            .as_str()
            .unwrap()
            .to_string();
        if measured {
            assert_eq!(view["status"], "done", "{name}: {view}");
            // Each workload measured, on both kernels: its report has it.
            for w in &workloads {
                assert!(
                    report.contains(&format!("\ttest: {w}\n")),
                    "{name}: no {w} in\n{report}"
                );
            }
            assert!(
                state == "measured" || state == "reported",
                "{name}: {state}"
            );
        } else {
            assert_eq!(view["status"], "cancelled", "{name}: {view}");
        }
    }
    // The lock fast path taken out (dcf23ac3e846 undone) costs every
    // F_SETLKW a spinlock round trip: a regression, answered in its thread.
    let replies = replies(&relay);
    let (_, (_, subject, body)) = replies
        .iter()
        .find(|(_, r)| r.0 == "<locks@example.org>")
        .unwrap_or_else(|| panic!("no reply to the locks series: {:#?}", replies.keys()));
    assert_eq!(subject, &format!("Re: {}", subjects["locks"]));
    assert!(
        body.contains("Measured on lock1, lock2: the workloads the workload map gives the files and functions it changes."),
        "{body}"
    );
    eprintln!("the locks series' reply:\n{body}");
    let ext4 = &series[&subjects["ext4"]];
    assert!(ext4["comparison_id"].is_null(), "{ext4}");
    assert_eq!(ext4["state"], "skipped");
    assert_eq!(
        ext4["reason"],
        "not measured: no workload exercises fs/ext4/inode.c"
    );
    assert!(
        page.contains("not measured: no workload exercises fs/ext4/inode.c"),
        "{page}"
    );
    server.stop().await;
    state.begin_shutdown();
}

/// `GET /api/v1/lists/{id}`.
fn list_view(url: &str, ci: &str, list: i64) -> Value {
    get_json(url, ci, &format!("/api/v1/lists/{list}"))
}
