//! The server as a lab's monitoring sees it: `serve --metrics-listen`
//! answers Prometheus without a token on its own address (the main one
//! still asks an admin's), and `--log-format json` writes one JSON object
//! a line, each line logged while answering a request carrying that
//! request's id — the one a proxy gave, or the one the answer names.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use patchperf_common::protocol::RegisterRequest;
use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::machine::inventory;
use patchperf_testkit::{database_url, openmetrics, token};
use serde_json::Value;
use sqlx::PgPool;

use crate::client::get;

/// The server's log, one parsed line at a time; a line that is not JSON
/// fails the test.
struct Log(mpsc::Receiver<String>);

impl Log {
    fn of(server: &mut Child) -> Log {
        let err = server.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Log(rx)
    }

    /// The first line from now on whose message starts with `prefix`.
    fn wait_for(&self, prefix: &str) -> Value {
        loop {
            let line = self
                .0
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no log line \"{prefix}…\" within 60 s"));
            let entry: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
            let message = entry["fields"]["message"].as_str().unwrap_or_default();
            if message.starts_with(prefix) {
                return entry;
            }
        }
    }
}

fn address(entry: &Value, prefix: &str) -> String {
    let message = entry["fields"]["message"].as_str().unwrap();
    message.strip_prefix(prefix).unwrap().to_string()
}

#[sqlx::test(migrations = false)]
async fn prometheus_reads_its_own_address_and_the_log_names_each_request(pool: PgPool) {
    let url = database_url(&pool);
    let mut server = Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args(["--log-format", "json", "serve", "--listen", "127.0.0.1:0"])
        .args(["--metrics-listen", "127.0.0.1:0", "--no-auto-calibrate"])
        .env("DATABASE_URL", &url)
        .env_remove("PATCHPERF_CONFIG")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Log::of(&mut server);
    let main = address(&log.wait_for("listening on "), "listening on ");
    let exporter = address(
        &log.wait_for("serving /metrics on "),
        "serving /metrics on ",
    );
    let runner = token(&pool, TokenKind::Runner).await;

    let log = tokio::task::spawn_blocking(move || {
        assert_eq!(get(&format!("{main}/metrics")).0, 401);
        // Refusals are logged with their reason, and every answer in the
        // access log, at the default level.
        let refused = log.wait_for("request refused");
        assert_eq!(refused["fields"]["status"], 401, "{refused}");
        assert_eq!(refused["span"]["path"], "/metrics", "{refused}");
        let access = log.wait_for("finished processing request");
        assert_eq!(access["fields"]["status"], 401, "{access}");
        assert!(access["fields"]["latency"].is_string(), "{access}");
        let (status, text) = get(&format!("{exporter}/metrics"));
        assert_eq!(status, 200, "{text}");
        let samples = openmetrics::parse(&text);
        assert_eq!(
            openmetrics::value(&samples, "patchperf_jobs", &[("state", "queued")]),
            Some(0.0)
        );
        assert!(
            samples
                .iter()
                .any(|s| s.name == "patchperf_worker_rounds_total"
                    && s.labels["worker"] == "report-builder"),
            "the workers of serve are counted"
        );

        let register = RegisterRequest {
            name: "m1".into(),
            inventory: inventory("m1"),
            protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
        };
        let answer = ureq::post(&format!("{main}/api/v1/runner/register"))
            .header("authorization", &format!("Bearer {runner}"))
            .header("x-request-id", "ci-run-4242")
            .send_json(&register)
            .unwrap();
        assert_eq!(answer.headers()["x-request-id"], "ci-run-4242");
        let registered = log.wait_for("runner registered");
        assert_eq!(registered["span"]["id"], "ci-run-4242", "{registered}");
        assert_eq!(registered["span"]["path"], "/api/v1/runner/register");
        assert_eq!(registered["fields"]["machine"], "m1");
        log
    })
    .await
    .unwrap();

    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(server.wait().unwrap().success(), "both listeners stop");
    drop(log);
}
