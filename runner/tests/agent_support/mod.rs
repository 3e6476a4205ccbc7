//! What the agent's tests share (`agent.rs`, `fleet.rs`, `beside.rs`): an agent of
//! machine `lab-1` that gives up on an unreachable server quickly, and a
//! small comparison submitted as CI submits one; a run as a guest
//! reports it; a real server to run them against.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::time::Duration;

use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use patchperf_runner::agent::backoff::Backoff;
use patchperf_runner::agent::client::Client;
use patchperf_runner::agent::inventory;
use patchperf_runner::agent::worker::{Agent, AgentOptions};
use patchperf_server::domain::tokens::TokenKind;
use patchperf_testkit::mbox::one_patch;
use patchperf_testkit::{TestServer, token};
use serde_json::json;
use sqlx::PgPool;

/// The agent of machine `lab-1` on `server` with `token`, its spool in
/// `spool`: claims wait 1 s, a call is tried twice.
pub fn agent(server: &str, token: &str, spool: &std::path::Path) -> Agent {
    agent_holding(server, token, spool, 1)
}

/// [`agent`], holding up to `jobs` jobs at once.
pub fn agent_holding(server: &str, token: &str, spool: &std::path::Path, jobs: usize) -> Agent {
    let options = AgentOptions {
        name: "lab-1".into(),
        spool_dir: spool.to_path_buf(),
        wait_seconds: 1,
        backoff: Backoff {
            tries: 2,
            first: Duration::from_millis(10),
            max: Duration::from_millis(10),
        },
        idle_retry: Duration::from_millis(10),
        jobs,
    };
    Agent::new(Client::new(server, token), options, inventory::collect()).unwrap()
}

/// Submits a comparison of 3 boots a side of open1 with one task.
pub fn submit(server: &str, ci: &str) -> i64 {
    let body = json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "mbox": one_patch("[PATCH] fs: tweak open"),
        "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 2, "warmup_seconds": 1 },
        "runs": 3,
    });
    let mut resp = ureq::post(&format!("{server}/api/v1/comparisons"))
        .header("authorization", &format!("Bearer {ci}"))
        .send_json(&body)
        .unwrap();
    let created: serde_json::Value = resp.body_mut().read_json().unwrap();
    created["id"].as_i64().unwrap()
}

/// One run of `workload` as a guest would report it under tcg-icount, its
/// per-process ops `ops`.
pub fn run_result(workload: &str, ops: f64) -> RunResult {
    RunResult {
        workload: workload.into(),
        mode: TaskMode::Process,
        nr_task: 1,
        warmup_seconds: 1,
        seconds: 2,
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: vec![],
        metrics: vec![MetricValue {
            name: "will-it-scale.per_process_ops".into(),
            value: ops,
        }],
        series: vec![],
        unsupported: vec![],
        profile_event: None,
        warnings: vec![],
    }
}

/// A real server on a loopback port with a runner and a ci token, and an
/// empty spool directory: where every agent test against the server starts.
pub struct Lab {
    pub server: TestServer,
    pub url: String,
    pub runner: String,
    pub ci: String,
    pub spool: tempfile::TempDir,
}

impl Lab {
    pub async fn start(pool: &PgPool) -> Lab {
        let server = TestServer::start(pool.clone(), "127.0.0.1:0".parse().unwrap()).await;
        Lab {
            url: server.url(),
            runner: token(pool, TokenKind::Runner).await,
            ci: token(pool, TokenKind::Ci).await,
            server,
            spool: tempfile::tempdir().unwrap(),
        }
    }
}
