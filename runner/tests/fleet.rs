//! The agent in a fleet an admin steers: it refuses a server that does not
//! speak its protocol version (a small fake server answering the
//! registration, since a real one of another version is not at hand),
//! saying what to upgrade; and told by a real server that its machine is
//! paused, it claims nothing until the admin resumes it. The shell's
//! other commands for a lab's people: `machines` (an admin steering the
//! fleet) and `lists` (the mailing lists the server follows).

use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{FinishRequest, PROTOCOL_VERSION};
use patchperf_runner::Error;
use patchperf_runner::agent::executor::UnsupportedExecutor;
use patchperf_runner::agent::worker::Step;
use patchperf_runner::error::exit;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::{TestServer, token};
use serde_json::{Value, json};
use sqlx::PgPool;

use agent_support::{agent, submit};

#[path = "agent_support/mod.rs"]
mod agent_support;

/// A server whose registration answers `answer`, whatever it is asked.
async fn fake_server(answer: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/api/v1/runner/register",
        axum::routing::post(move || async move { axum::Json(answer) }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// What registering with a server answering `answer` ends in.
async fn register_with(answer: Value) -> Result<i64, Error> {
    let url = fake_server(answer).await;
    let spool = tempfile::tempdir().unwrap();
    tokio::task::spawn_blocking(move || agent(&url, "t", spool.path()).register())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_refuses_a_server_of_another_protocol_version_saying_what_to_upgrade() {
    // A server older than this runner's version (here: one that speaks
    // only version 0).
    let e = register_with(json!({
        "machine_id": 1, "protocol_version": 0, "oldest_protocol_version": 0
    }))
    .await
    .unwrap_err();
    let Error::Incompatible(why) = &e else {
        panic!("not refused as incompatible: {e:?}");
    };
    assert!(why.contains("speaks patchperf protocol version 0"), "{why}");
    assert!(
        why.contains(&format!("this runner's version {PROTOCOL_VERSION}")),
        "{why}"
    );
    assert!(why.contains("upgrade the server first"), "{why}");
    assert_eq!(e.exit_code(), exit::REFUSED);

    // A server that no longer speaks it.
    let newer = PROTOCOL_VERSION + 1;
    let e = register_with(json!({
        "machine_id": 1, "protocol_version": newer + 1, "oldest_protocol_version": newer
    }))
    .await
    .unwrap_err();
    assert!(e.to_string().contains("upgrade this runner"), "{e}");

    // A server from before versions answers without one: version 1, which
    // this runner speaks while it is version 1.
    let old = register_with(json!({ "machine_id": 7 })).await;
    assert_eq!(old.ok(), (PROTOCOL_VERSION == 1).then_some(7));
}

/// POSTs `body` to `path` of `server` with `token`; the JSON answer.
fn post(server: &str, token: &str, path: &str, body: &Value) -> Value {
    let mut resp = ureq::post(&format!("{server}{path}"))
        .header("authorization", &format!("Bearer {token}"))
        .send_json(body)
        .unwrap();
    resp.body_mut().read_json().unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_paused_agent_claims_nothing_until_an_admin_resumes_it(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let url = server.url();
    let runner = token(&pool, TokenKind::Runner).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let admin = token(&pool, TokenKind::Admin).await;
    let spool = tempfile::tempdir().unwrap();
    let spool_dir = spool.path().to_path_buf();

    let (held, after) = tokio::task::spawn_blocking(move || {
        let mut agent = agent(&url, &runner, &spool_dir);
        agent.register().unwrap();
        let paused = post(&url, &admin, "/api/v1/machines/lab-1/pause", &json!({}));
        assert_eq!(paused["state"], "paused");
        submit(&url, &ci);
        let held = agent.step(&mut UnsupportedExecutor).unwrap();
        post(&url, &admin, "/api/v1/machines/lab-1/resume", &json!({}));
        let after = agent.step(&mut UnsupportedExecutor).unwrap();
        (held, after)
    })
    .await
    .unwrap();

    assert_eq!(held, Step::Held(MachineState::Paused));
    let Step::Ran { finish, .. } = after else {
        panic!("no job after the resume: {after:?}");
    };
    assert!(matches!(finish, FinishRequest::Failed { .. }), "{finish:?}");
    server.stop().await;
}

/// `patchperf-runner machines …` against a real server; its exit status
/// and standard output and error.
fn machines(server: &str, token: &str, args: &[&str]) -> (i32, String, String) {
    shell("machines", server, token, args, "")
}

/// `patchperf-runner COMMAND --server … --token … args`, `stdin` on its
/// standard input; its exit status and standard output and error.
fn shell(
    command: &str,
    server: &str,
    token: &str,
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_patchperf-runner"))
        .args([command, "--server", server, "--token", token])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An admin steers the fleet from a shell: `machines` lists it, `drain`
/// with a note says the machine is drained (it holds no job), `resume`
/// and `retire` answer with the machine's line; a ci token, or a machine
/// that does not exist, is refused with exit 2 and the server's words.
#[sqlx::test(migrations = "../migrations")]
async fn an_admin_lists_and_steers_machines_from_the_command_line(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let url = server.url();
    let runner = token(&pool, TokenKind::Runner).await;
    let ci = token(&pool, TokenKind::Ci).await;
    let admin = token(&pool, TokenKind::Admin).await;
    let spool = tempfile::tempdir().unwrap();
    let spool_dir = spool.path().to_path_buf();

    tokio::task::spawn_blocking(move || {
        agent(&url, &runner, &spool_dir).register().unwrap();

        let (code, out, err) = machines(&url, &admin, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("lab-1"), "{out}");
        assert!(out.contains(" active "), "{out}");

        let (code, out, err) = machines(
            &url,
            &admin,
            &["drain", "lab-1", "--note", "kernel upgrade"],
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("draining (drained)"), "{out}");
        assert!(out.contains("\"kernel upgrade\""), "{out}");
        let (_, listed, _) = machines(&url, &admin, &["list"]);
        assert!(listed.contains("draining (drained)"), "{listed}");

        let (code, out, _) = machines(&url, &admin, &["resume", "lab-1"]);
        assert_eq!(code, 0);
        assert!(out.contains(" active "), "{out}");

        let (code, _, err) = machines(&url, &ci, &["pause", "lab-1"]);
        assert_eq!(code, 2, "a ci token steers nothing: {err}");
        let (code, _, err) = machines(&url, &admin, &["pause", "lab-9"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("lab-9"), "{err}");

        let (code, out, err) = machines(&url, &admin, &["retire", "lab-1"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("retired"), "{out}");
        let (_, listed, _) = machines(&url, &admin, &[]);
        assert!(
            !listed.contains("lab-1"),
            "retired machines are left out: {listed}"
        );
        let (_, listed, _) = machines(&url, &admin, &["list", "--retired"]);
        assert!(listed.contains("lab-1"), "{listed}");
    })
    .await
    .unwrap();
    server.stop().await;
}

/// `patchperf-runner lists …` against a real server, `stdin` on its
/// standard input.
fn lists(server: &str, token: &str, args: &[&str], stdin: &str) -> (i32, String, String) {
    shell("lists", server, token, args, stdin)
}

/// A ci token follows a list from a shell, looks at it, hands it mail on
/// standard input and is told why an archive-less list cannot be read;
/// an admin removes it; each refusal exits 2 with the server's words.
#[sqlx::test(migrations = "../migrations")]
async fn lists_are_followed_fed_and_removed_from_the_command_line(pool: PgPool) {
    let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let url = server.url();
    let ci = token(&pool, TokenKind::Ci).await;
    let admin = token(&pool, TokenKind::Admin).await;
    tokio::task::spawn_blocking(move || {
        let (code, out, err) = lists(&url, &ci, &[], "");
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("no list is followed"), "{out}");

        let add = [
            "add",
            "linux-fsdevel",
            "--address",
            "linux-fsdevel@vger.kernel.org",
            "--base-url",
            "https://git.example.org/linux.git",
            "--base-branch",
            "master",
            "-w",
            "dup1",
            "--runs",
            "5",
            "--cc-thread",
        ];
        let (code, out, err) = lists(&url, &ci, &add, "");
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(" linux-fsdevel "), "{out}");
        assert!(out.contains("mail handed in"), "{out}");
        let (code, _, err) = lists(&url, &ci, &add, "");
        assert_eq!(code, 2, "the name is taken: {err}");
        assert!(err.contains("already named"), "{err}");

        let (code, out, err) = lists(&url, &ci, &["show", "linux-fsdevel"], "");
        assert_eq!(code, 0, "{err}");
        let shown: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(shown["runs_per_side"], 5, "{shown}");
        assert_eq!(shown["workloads"], json!(["dup1"]), "{shown}");
        assert_eq!(shown["cc_thread"], true, "{shown}");

        // A reply in a thread: mail, but no patch to measure.
        let reply = "From: Al Viro <viro@zeniv.linux.org.uk>\n\
                     To: linux-fsdevel@vger.kernel.org\n\
                     Subject: Re: [PATCH] fs: something\n\
                     Message-ID: <reply-1@example.org>\n\
                     Date: Sun, 6 Dec 2026 10:00:00 +0000\n\n\
                     Looks fine.\n";
        let (code, out, err) = lists(&url, &ci, &["hand-in", "linux-fsdevel"], reply);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("taken 1"), "{out}");
        let (code, _, err) = lists(&url, &ci, &["hand-in", "linux-fsdevel"], "");
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no mail"), "{err}");

        let (code, _, err) = lists(&url, &ci, &["read", "linux-fsdevel"], "");
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("has no archive to read"), "{err}");
        let (code, _, err) = lists(&url, &ci, &["show", "lkml"], "");
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no list named \"lkml\""), "{err}");

        let (code, _, err) = lists(&url, &ci, &["remove", "linux-fsdevel"], "");
        assert_eq!(code, 2, "a ci token removes nothing: {err}");
        let (code, out, err) = lists(&url, &admin, &["remove", "linux-fsdevel"], "");
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("removed"), "{out}");
        let (_, out, _) = lists(&url, &ci, &["list"], "");
        assert!(out.starts_with("no list is followed"), "{out}");
    })
    .await
    .unwrap();
    server.stop().await;
}
