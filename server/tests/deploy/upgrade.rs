//! A rolling upgrade: the server of the release before (built from the
//! newest commit with other migrations, `testkit::previous_release`)
//! serves a database, the new server migrates it while the old one runs,
//! and the old one goes on taking runs, finishing jobs and answering
//! pages on the new schema; then both serve it side by side. The rule
//! that makes it so (migrations expand, then contract a release later) is
//! in the README, "Upgrading".

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, JobSpec, MACHINE_HEADER, RegisterRequest, RunUpload,
};
use patchperf_common::run::Side;
use patchperf_testkit::free_port;
use patchperf_testkit::mbox::one_patch;
use patchperf_testkit::previous_release::{self, PreviousServer};
use serde_json::{Value, json};
use sqlx::PgPool;

const NEW: &str = env!("CARGO_BIN_EXE_patchperf-server");

fn command(binary: &str, args: &[&str], url: &str) -> Command {
    let mut cmd = Command::new(binary);
    cmd.args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("PATCHPERF_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("DATABASE_URL", url);
    cmd
}

fn run(binary: &str, args: &[&str], url: &str) -> Output {
    let out = command(binary, args, url).output().unwrap();
    assert!(
        out.status.success(),
        "{binary} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `serve` on a free port, once /healthz answers; or how it failed.
fn serve(binary: &str, url: &str) -> Result<(Child, String), String> {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // No A/A comparison queued by itself: the test runs the jobs it queued.
    let args = ["serve", "--listen", &listen, "--no-auto-calibrate"];
    let mut child = command(binary, &args, url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://{listen}");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if ureq::get(&format!("{base}/healthz")).call().is_ok() {
            return Ok((child, base));
        }
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("no /healthz within 60 s".into())
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// A runner and CI speaking to one server over HTTP.
struct Client {
    base: String,
    runner: String,
    ci: String,
    machine: i64,
}

impl Client {
    fn call(
        &self,
        path: &str,
        token: &str,
        headers: &[(&str, String)],
        body: Value,
    ) -> (u16, Value) {
        let mut req = ureq::post(&format!("{}{path}", self.base))
            .header("authorization", &format!("Bearer {token}"))
            .config()
            .http_status_as_error(false)
            .build();
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let mut answer = req.send_json(body).unwrap();
        let status = answer.status().as_u16();
        let text = answer.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn get(&self, path: &str) -> (u16, String) {
        let mut answer = ureq::get(&format!("{}{path}", self.base))
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .unwrap();
        let status = answer.status().as_u16();
        (
            status,
            answer.body_mut().read_to_string().unwrap_or_default(),
        )
    }

    fn submit(&self, subject: &str) -> i64 {
        let body = json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": one_patch(subject),
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
            "backend": "tcg-icount",
            "machine": "rack-7",
        });
        let (status, answer) = self.call("/api/v1/comparisons", &self.ci, &[], body);
        assert_eq!(status, 201, "{answer}");
        answer["id"].as_i64().unwrap()
    }

    /// Claims one job and runs it: a run per boot, then the finish.
    fn run_one_job(&self) -> bool {
        let claim = ClaimRequest {
            machine_id: self.machine,
            wait_seconds: 0,
        };
        let (status, job) = self.call(
            "/api/v1/jobs/claim",
            &self.runner,
            &[],
            serde_json::to_value(claim).unwrap(),
        );
        if status == 204 {
            return false;
        }
        assert_eq!(status, 200, "claim: {job}");
        let job: JobSpec = serde_json::from_value(job).unwrap();
        let headers = [
            (MACHINE_HEADER, self.machine.to_string()),
            (ATTEMPT_HEADER, job.attempt.to_string()),
        ];
        for boot in &job.boots {
            let ops = if boot.side == Side::Patched {
                105_000.0
            } else {
                100_000.0
            };
            let ops = ops * (1.0 + 0.001 * f64::from(boot.seq));
            let per_second = (0..5).map(|s| ops * (1.0 + 0.001 * f64::from(s))).collect();
            let result = patchperf_testkit::runs::run_result("dup1", 1, per_second, ops);
            let upload = RunUpload {
                boot: *boot,
                result,
            };
            let path = format!("/api/v1/jobs/{}/runs", job.job_id);
            let (status, answer) = self.call(
                &path,
                &self.runner,
                &headers,
                serde_json::to_value(upload).unwrap(),
            );
            assert!((200..300).contains(&status), "upload: {status} {answer}");
        }
        let path = format!("/api/v1/jobs/{}/finish", job.job_id);
        let finish = json!({ "outcome": "done", "log_tail": "guest powered off" });
        let (status, answer) = self.call(&path, &self.runner, &headers, finish);
        assert!((200..300).contains(&status), "finish: {status} {answer}");
        true
    }

    /// The comparison's JSON once its verdict is stored (the builder runs a
    /// moment after its last job).
    fn verdict(&self, id: i64) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(&format!("/api/v1/comparisons/{id}"));
            assert_eq!(status, 200, "{body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            if v["status"] == "done" && !v["verdict"]["overall"].is_null() {
                return v;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{body}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn url_of(pool: &PgPool) -> String {
    let o = pool.connect_options();
    format!(
        "postgres://{}@{}:{}/{}",
        o.get_username(),
        o.get_host(),
        o.get_port(),
        o.get_database().unwrap()
    )
}

#[sqlx::test(migrations = false)]
async fn the_release_before_keeps_serving_while_the_new_one_migrates_under_it(pool: PgPool) {
    let url = url_of(&pool);
    tokio::task::spawn_blocking(move || rolling_upgrade(&url))
        .await
        .unwrap();
}

fn rolling_upgrade(url: &str) {
    // Without the history (a tarball, a shallow clone) there is no release
    // before to build; a build that fails is a failure.
    if let Err(why) = previous_release::previous_commit() {
        eprintln!("skipped: no release before to build: {why}");
        return;
    }
    let previous: PreviousServer = previous_release::server().unwrap_or_else(|e| panic!("{e}"));
    let old = previous.binary.to_str().unwrap();
    eprintln!("the release before: {} ({old})", previous.commit);

    // The old server makes the database its own and starts serving.
    let (old_server, old_base) = serve(old, url).unwrap();
    let token = |kind: &str| {
        // The old release's spelling, which the new one keeps as an alias.
        let out = run(
            old,
            &["token", "create", "--kind", kind, "--name", kind],
            url,
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (runner, ci) = (token("runner"), token("ci"));
    let mut old_client = Client {
        base: old_base,
        runner,
        ci,
        machine: 0,
    };
    let register = RegisterRequest {
        name: "rack-7".into(),
        inventory: patchperf_testkit::machine::inventory("rack-7"),
        protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
    };
    let (status, answer) = old_client.call(
        "/api/v1/runner/register",
        &old_client.runner.clone(),
        &[],
        serde_json::to_value(register).unwrap(),
    );
    assert_eq!(status, 200, "{answer}");
    old_client.machine = answer["machine_id"].as_i64().unwrap();
    let first = old_client.submit("fs: before the upgrade");
    assert!(old_client.run_one_job());

    // The new release migrates the database under the running old one.
    run(NEW, &["migrate"], url);

    // The old server goes on: the rest of the comparison, a new one, pages.
    while old_client.run_one_job() {}
    let before = old_client.verdict(first);
    assert_eq!(before["verdict"]["overall"], "improvement", "{before}");
    let second = old_client.submit("fs: during the upgrade");
    while old_client.run_one_job() {}
    old_client.verdict(second);
    for path in [
        "/".to_string(),
        format!("/comparisons/{first}"),
        format!("/api/v1/comparisons/{first}/report.txt"),
        "/machines/rack-7".to_string(),
    ] {
        let (status, body) = old_client.get(&path);
        assert_eq!(status, 200, "old server, {path}: {body}");
    }

    // The new server beside it reads the same verdicts.
    let (new_server, new_base) = serve(NEW, url).unwrap();
    let new_client = Client {
        base: new_base,
        ..old_client
    };
    for id in [first, second] {
        assert_eq!(new_client.verdict(id)["verdict"]["overall"], "improvement");
    }
    stop(old_server);

    // An old server started again on the new schema: a release that
    // tolerates migrations newer than its own must start.
    if previous.lib_rs.contains("ignore_missing: true") {
        let (again, _) = serve(old, url)
            .unwrap_or_else(|e| panic!("the release before did not start on the new schema: {e}"));
        stop(again);
    } else {
        eprintln!(
            "the release before ({}) predates starting on a newer schema; not started again",
            previous.commit
        );
    }
    stop(new_server);
}
