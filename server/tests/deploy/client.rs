//! A `patchperf-server` binary on a test's database, and a runner and CI
//! speaking to it over HTTP as the real ones do: what the tests of
//! several servers over time (`upgrade.rs`) or side by side
//! (`two_servers.rs`) share.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, JobSpec, MACHINE_HEADER, RegisterRequest, RunUpload,
};
use patchperf_common::run::Side;
use patchperf_testkit::free_port;
use patchperf_testkit::mbox::one_patch;
use serde_json::{Value, json};

/// The server built with these tests.
pub const NEW: &str = env!("CARGO_BIN_EXE_patchperf-server");

/// `binary` with `args` on database `url`, no other settings.
pub fn command(binary: &str, args: &[&str], url: &str) -> Command {
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

/// Runs `binary args` to success; its output.
pub fn run(binary: &str, args: &[&str], url: &str) -> Output {
    let out = command(binary, args, url).output().unwrap();
    assert!(
        out.status.success(),
        "{binary} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `serve` on a free port, once /healthz answers; or how it failed.
pub fn serve(binary: &str, url: &str) -> Result<(Child, String), String> {
    serve_with(binary, url, &[])
}

/// [`serve`] with `extra` flags.
pub fn serve_with(binary: &str, url: &str, extra: &[&str]) -> Result<(Child, String), String> {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // No A/A comparison queued by itself: the test runs the jobs it queued.
    let mut args = vec!["serve", "--listen", &listen, "--no-auto-calibrate"];
    args.extend_from_slice(extra);
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

/// Stops a server with SIGTERM and waits for it.
pub fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// GETs `url` without a token; the status and the text, whatever the
/// status.
pub fn get(url: &str) -> (u16, String) {
    let mut answer = ureq::get(url)
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

/// A runner and CI speaking to one server over HTTP.
#[derive(Debug, Clone)]
pub struct Client {
    /// The server's URL.
    pub base: String,
    /// A runner token.
    pub runner: String,
    /// A CI token.
    pub ci: String,
    /// The machine this runner registered (0 before).
    pub machine: i64,
}

impl Client {
    /// POSTs `body` with `token` and `headers`; the status and the JSON.
    pub fn call(
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

    /// GETs `path` without a token; the status and the text.
    pub fn get(&self, path: &str) -> (u16, String) {
        get(&format!("{}{path}", self.base))
    }

    /// Submits a dup1 comparison of one patch for machine rack-7.
    pub fn submit(&self, subject: &str) -> i64 {
        self.submit_for(subject, Some("rack-7"))
    }

    /// Submits a dup1 comparison of one patch for `machine` (`None`: the
    /// first machine to claim it).
    pub fn submit_for(&self, subject: &str, machine: Option<&str>) -> i64 {
        let body = json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": one_patch(subject),
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
            "backend": "tcg-icount",
            "machine": machine,
        });
        let (status, answer) = self.call("/api/v1/comparisons", &self.ci, &[], body);
        assert_eq!(status, 201, "{answer}");
        answer["id"].as_i64().unwrap()
    }

    /// Registers machine `name` under the runner token; keeps its id.
    pub fn register(&mut self, name: &str) {
        let register = RegisterRequest {
            name: name.into(),
            inventory: patchperf_testkit::machine::inventory(name),
            protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
        };
        let (status, answer) = self.call(
            "/api/v1/runner/register",
            &self.runner,
            &[],
            serde_json::to_value(register).unwrap(),
        );
        assert_eq!(status, 200, "{answer}");
        self.machine = answer["machine_id"].as_i64().unwrap();
    }

    /// Claims one job and runs it: a run per boot, then the finish; the
    /// job's id, or `None` when there was none to claim.
    pub fn run_one_job(&self) -> Option<i64> {
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
            return None;
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
        Some(job.job_id)
    }

    /// The comparison's JSON once its verdict is stored (the builder runs a
    /// moment after its last job).
    pub fn verdict(&self, id: i64) -> Value {
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
