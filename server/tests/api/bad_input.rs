//! Bad submissions get a 4xx naming the problem, and store nothing.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use patchperf_server::Config;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::{TestApp, comparison_request, test_config};

async fn assert_nothing_stored(app: &TestApp) {
    for table in ["comparisons", "patch_series", "patches", "jobs", "boots"] {
        assert_eq!(app.count(table).await, 0, "{table} has rows");
    }
}

/// Posts the test submission with `extra` merged in, as the ci token.
async fn submit_raw(app: &TestApp, body: &str) -> crate::helpers::Answer {
    app.send(
        Method::POST,
        "/api/v1/comparisons",
        Some(&app.ci),
        &[],
        Some(Body::from(body.to_string())),
    )
    .await
}

#[sqlx::test(migrations = "../migrations")]
async fn malformed_json_is_400_naming_the_problem(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = submit_raw(&app, "{\"base\": ").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().starts_with("malformed JSON body:"),
        "{}",
        a.error()
    );

    let mut missing = comparison_request(3, json!({}));
    missing.as_object_mut().unwrap().remove("runs");
    let a = submit_raw(&app, &missing.to_string()).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("missing field `runs`"), "{}", a.error());

    let a = submit_raw(
        &app,
        &comparison_request(3, json!({"colour": "red"})).to_string(),
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.error().contains("unknown field `colour`"),
        "{}",
        a.error()
    );

    let a = app
        .send(
            Method::POST,
            "/api/v1/comparisons",
            Some(&app.ci),
            &[],
            None,
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("JSON"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_oversized_body_is_413(pool: PgPool) {
    let config = Config {
        body_limit: 4096,
        ..test_config()
    };
    let app = TestApp::with_config(pool, config).await;
    let huge = format!("{}{}", crate::helpers::MBOX, "x".repeat(8192));
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(3, json!({ "mbox": huge })),
        )
        .await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(a.error().contains("too large"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn invalid_submissions_are_422_naming_the_field(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"mbox": "From: a <a@b>\nSubject: hi\n\nno diff here\n"}),
            "mbox contains no patch (no message with a diff in it)",
        ),
        (json!({"mbox": ""}), "mbox is empty"),
        (
            json!({"aa": true}),
            "an A/A comparison (aa: true) boots the base kernel on both sides; leave out mbox",
        ),
        (
            json!({"workloads": ["open1", "open4"]}),
            "unknown workload `open4`; known workloads: open1, open2, open3, open-enoent, open-creat, dup1, fstat, fstatat-empty, statx-empty, poll1, poll2, pipe1, read1, read2, write1, pread1, pwrite1, lseek1, lseek2, unlink1, unlink2, lock1, lock2, eventfd1, getppid1",
        ),
        (
            json!({"aa": true, "mbox": "", "workloads": []}),
            "workloads must name at least one of: open1, open2, open3, open-enoent, open-creat, dup1, fstat, fstatat-empty, statx-empty, poll1, poll2, pipe1, read1, read2, write1, pread1, pwrite1, lseek1, lseek2, unlink1, unlink2, lock1, lock2, eventfd1, getppid1",
        ),
        (
            json!({"workloads": [], "mbox": "From: A <a@b.org>\nSubject: [PATCH] ext4: x\n\nx\n---\ndiff --git a/fs/ext4/inode.c b/fs/ext4/inode.c\n--- a/fs/ext4/inode.c\n+++ b/fs/ext4/inode.c\n@@ -1 +1 @@\n-a\n+b\n"}),
            "not measured: no workload exercises fs/ext4/inode.c; name the workloads to measure it on anyway",
        ),
        (
            json!({"workloads": ["dup1", "dup1"]}),
            "workload `dup1` is listed twice",
        ),
        (
            json!({"runs": 2}),
            "runs is 2; a comparison needs 3 to 100 runs a side",
        ),
        (
            json!({"runs": 101}),
            "runs is 101; a comparison needs 3 to 100 runs a side",
        ),
        (
            json!({"machine": "nowhere"}),
            "unknown machine `nowhere`; GET /api/v1/machines lists the registered ones",
        ),
        (
            json!({"params": {"nr_task": [], "seconds": 5, "warmup_seconds": 1}}),
            "params.nr_task must list 1 to 16 task counts",
        ),
        (
            json!({"params": {"nr_task": [1], "seconds": 0, "warmup_seconds": 1}}),
            "params.seconds is 0; it must be 1 to 600 measured seconds",
        ),
        (
            json!({"base": {"kind": "tarball", "name": "../../etc/passwd"}}),
            "base.name \"../../etc/passwd\" must be a plain tarball name such as \"linux-source-6.1\"",
        ),
        (
            json!({"base": {"kind": "git", "url": "https://git.example.org/linux.git", "commit": ""}}),
            "base.commit \"\" must be a commit id, tag or branch",
        ),
        (
            json!({"config_fragment": "CONFIG_FOO=y\nrm -rf /\n"}),
            "config_fragment line \"rm -rf /\" is not `CONFIG_FOO=value` or `# CONFIG_FOO is not set`",
        ),
    ];
    for (extra, message) in cases {
        let a = app.try_submit(extra.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{extra}: {a:?}");
        assert_eq!(a.error(), message, "{extra}");
    }
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_bad_task_count_in_the_body_is_refused_when_reading_it(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            comparison_request(
                3,
                json!({"params": {"nr_task": ["150%"], "seconds": 5, "warmup_seconds": 1}}),
            ),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.error().contains("params"), "{}", a.error());
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_endpoints_answer_json_404(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let a = app.get("/api/v1/nothing-here").await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(
        a.error(),
        "no such endpoint: /api/v1/nothing-here; see /api/v1/openapi.json"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_fields_inside_params_and_base_are_400_naming_them(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let cases = [
        (
            json!({"params": {"nr_task": [1], "seconds": 5, "warmup_seconds": 1, "secnods": 9}}),
            "unknown field `secnods`",
        ),
        (
            json!({"base": {"kind": "tarball", "name": "linux-source-6.1", "commit": "v6.1"}}),
            "unknown field `commit`",
        ),
        (
            json!({"base": {"kind": "git", "url": "https://git.example.org/linux.git",
                            "commit": "v6.1", "branch": "main"}}),
            "unknown field `branch`",
        ),
    ];
    for (extra, field) in cases {
        let a = submit_raw(&app, &comparison_request(3, extra.clone()).to_string()).await;
        // As an unknown top-level field answers: the body is unreadable.
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{extra}: {a:?}");
        assert!(a.error().contains(field), "{extra}: {}", a.error());
    }
    assert_nothing_stored(&app).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn git_options_posing_as_url_or_commit_are_422_naming_the_field(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let git =
        |url: &str, commit: &str| json!({"base": {"kind": "git", "url": url, "commit": commit}});
    let cases = [
        (git("--upload-pack=touch /tmp/pwned", "v6.1"), "base.url"),
        (git("-u", "v6.1"), "base.url"),
        (
            git("ssh://-oProxyCommand=touch%20x/linux", "v6.1"),
            "base.url",
        ),
        (git("ext::sh -c touch% /tmp/pwned", "v6.1"), "base.url"),
        (
            git("https://git.example.org/linux.git\n", "v6.1"),
            "base.url",
        ),
        (
            git("https://git.example.org/linux.git", "--output=/tmp/x"),
            "base.commit",
        ),
        (
            git("https://git.example.org/linux.git", "v6.1..master"),
            "base.commit",
        ),
        (
            git("https://git.example.org/linux.git", "HEAD@{1}"),
            "base.commit",
        ),
    ];
    for (extra, field) in cases {
        let a = app.try_submit(extra.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{extra}: {a:?}");
        assert!(a.error().starts_with(field), "{extra}: {}", a.error());
    }
    assert_nothing_stored(&app).await;
    for (url, commit) in [
        (
            "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",
            "v6.1",
        ),
        ("git@github.com:torvalds/linux.git", "deadbeef"),
        ("ssh://git@git.example.org/linux.git", "refs/heads/for-next"),
        (
            "/srv/git/linux.git",
            "830b3c68c1fb1e9176028d02ef86f3cf76aa2476",
        ),
        ("file:///srv/git/linux.git", "master"),
    ] {
        let a = app.try_submit(git(url, commit)).await;
        assert_eq!(a.status, StatusCode::CREATED, "{url} {commit}: {a:?}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_plain_diff_is_422_saying_what_to_send(pool: PgPool) {
    let app = TestApp::new(pool).await;
    let plain = [
        "diff --git a/fs/open.c b/fs/open.c\nindex 1234567..89abcde 100644\n\
         --- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-old\n+new\n",
        "--- a/fs/open.c\t2024-01-01 00:00:00.000000000 +0000\n\
         +++ b/fs/open.c\t2024-01-01 00:00:00.000000000 +0000\n@@ -1 +1 @@\n-old\n+new\n",
    ];
    for mbox in plain {
        let a = app.try_submit(json!({ "mbox": mbox })).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
        assert!(
            a.error().contains("git format-patch --stdout"),
            "{}",
            a.error()
        );
    }
    assert_nothing_stored(&app).await;
}
