//! Spawns the app on a fresh database and speaks to it like a client would:
//! tokens of each kind, a registered machine, a submitted comparison.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, JobSpec, MACHINE_HEADER, MachineInventory, RegisterRequest,
};
use patchperf_common::run::{
    MeasurementMode, MetricValue, RunResult, SecondSample, Series, TaskMode,
};
use patchperf_server::auth::TokenKind;
use patchperf_server::routes::tokens::create_token;
use patchperf_server::{AppState, Config};
use serde_json::{Value, json};
use sqlx::PgPool;
use tower::ServiceExt;

/// A two-patch series as `git format-patch --stdout` writes it.
pub const MBOX: &str = "\
From 3a5d1c1e2f0b4e8c9d7a6b5c4d3e2f1a0b9c8d7e Mon Sep 17 00:00:00 2001
From: Kernel Hacker <hacker@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH 1/2] fs: skip a lookup in open
Message-ID: <20240101000000.1-hacker@example.org>

Body.
---
 fs/open.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/fs/open.c b/fs/open.c
--- a/fs/open.c
+++ b/fs/open.c
@@ -1,1 +1,1 @@
-old
+new
-- 
2.39.2

From 4b6e2d2f3a1c5f9d0e8b7c6d5e4f3a2b1c0d9e8f Mon Sep 17 00:00:00 2001
From: Kernel Hacker <hacker@example.org>
Subject: [PATCH 2/2] fs: and another
Message-ID: <20240101000000.2-hacker@example.org>

diff --git a/fs/stat.c b/fs/stat.c
--- a/fs/stat.c
+++ b/fs/stat.c
@@ -1,1 +1,1 @@
-old
+new
";

/// The app over a fresh database, with one token of each kind.
#[derive(Debug)]
pub struct TestApp {
    /// The application, driven without a socket.
    pub app: Router,
    /// Its database.
    pub pool: PgPool,
    /// A runner token.
    pub runner: String,
    /// A CI token.
    pub ci: String,
    /// An admin token.
    pub admin: String,
}

/// An answer: status and JSON body (Null when empty or not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub json: Value,
}

impl Answer {
    /// The `error` message of an error answer.
    pub fn error(&self) -> &str {
        self.json["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error in {:?}", self))
    }
}

/// Test configuration: short claim waits and polls so nothing sleeps long.
pub fn test_config() -> Config {
    Config {
        claim_wait_max: Duration::from_secs(2),
        claim_poll: Duration::from_millis(50),
        ..Config::default()
    }
}

impl TestApp {
    pub async fn new(pool: PgPool) -> Self {
        Self::with_config(pool, test_config()).await
    }

    pub async fn with_config(pool: PgPool, config: Config) -> Self {
        Self::with_state(AppState::new(pool, config)).await
    }

    pub async fn with_state(state: AppState) -> Self {
        let pool = state.db.clone();
        let app = patchperf_server::app(state);
        let mut tokens = Vec::new();
        for (kind, name) in [
            (TokenKind::Runner, "lab-runner"),
            (TokenKind::Ci, "kernel-ci"),
            (TokenKind::Admin, "operator"),
        ] {
            let mut conn = pool.acquire().await.unwrap();
            tokens.push(create_token(&mut conn, kind, name).await.unwrap().token);
        }
        let [runner, ci, admin] = tokens.try_into().unwrap();
        TestApp {
            app,
            pool,
            runner,
            ci,
            admin,
        }
    }

    /// Sends a request with an optional bearer token, extra headers and body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, String)],
        body: Option<Body>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let req = match body {
            Some(body) => req.header("content-type", "application/json").body(body),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer { status, json }
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Answer {
        self.send(
            Method::POST,
            path,
            Some(token),
            &[],
            Some(Body::from(body.to_string())),
        )
        .await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None, &[], None).await
    }

    /// Registers a machine under the runner token; returns its id.
    pub async fn register(&self, name: &str) -> i64 {
        self.register_with(name, &self.runner.clone()).await
    }

    pub async fn register_with(&self, name: &str, token: &str) -> i64 {
        let req = RegisterRequest {
            name: name.to_string(),
            inventory: inventory(name),
        };
        let a = self
            .post(
                "/api/v1/runner/register",
                token,
                serde_json::to_value(req).unwrap(),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json["machine_id"].as_i64().unwrap()
    }

    /// Submits a comparison of `runs` a side of open1 with 1 and 2 tasks,
    /// with `extra` fields merged into the request; returns its id.
    pub async fn submit(&self, runs: u32, extra: Value) -> i64 {
        let a = self
            .post(
                "/api/v1/comparisons",
                &self.ci,
                comparison_request(runs, extra),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        a.json["id"].as_i64().unwrap()
    }

    /// Claims without waiting.
    pub async fn claim(&self, machine_id: i64) -> Option<JobSpec> {
        self.claim_waiting(machine_id, 0).await
    }

    pub async fn claim_waiting(&self, machine_id: i64, wait_seconds: u32) -> Option<JobSpec> {
        let req = ClaimRequest {
            machine_id,
            wait_seconds,
        };
        let a = self
            .post(
                "/api/v1/jobs/claim",
                &self.runner,
                serde_json::to_value(req).unwrap(),
            )
            .await;
        match a.status {
            StatusCode::OK => Some(serde_json::from_value(a.json).unwrap()),
            StatusCode::NO_CONTENT => None,
            other => panic!("claim answered {other}: {:?}", a.json),
        }
    }

    /// A job-scoped call (`heartbeat`, `state`, `runs`, `finish`) as the
    /// holder of `job`'s lease on `machine_id`.
    pub async fn job_call(
        &self,
        machine_id: i64,
        job: &JobSpec,
        action: &str,
        body: Value,
    ) -> Answer {
        self.job_call_as(
            &self.runner.clone(),
            machine_id,
            job.job_id,
            job.attempt,
            action,
            body,
        )
        .await
    }

    pub async fn job_call_as(
        &self,
        token: &str,
        machine_id: i64,
        job_id: i64,
        attempt: u32,
        action: &str,
        body: Value,
    ) -> Answer {
        let headers = [
            (MACHINE_HEADER, machine_id.to_string()),
            (ATTEMPT_HEADER, attempt.to_string()),
        ];
        self.send(
            Method::POST,
            &format!("/api/v1/jobs/{job_id}/{action}"),
            Some(token),
            &headers,
            Some(Body::from(body.to_string())),
        )
        .await
    }

    /// Uploads a run of every workload and nr_task for every boot of the
    /// job, as a complete job would.
    pub async fn upload_all(&self, machine_id: i64, job: &JobSpec) {
        for boot in &job.boots {
            for workload in &job.workloads {
                for nr_task in [1, 2] {
                    let body = json!({ "boot": boot, "result": run_result(workload, nr_task) });
                    let a = self.job_call(machine_id, job, "runs", body).await;
                    assert!(a.status.is_success(), "{a:?}");
                }
            }
        }
    }

    /// Rows in a table.
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Makes every current lease run out now, as if the runner went silent.
    pub async fn expire_leases(&self) {
        sqlx::query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE lease_expires_at IS NOT NULL")
            .execute(&self.pool)
            .await
            .unwrap();
    }

    pub async fn comparison(&self, id: i64) -> Value {
        let a = self.get(&format!("/api/v1/comparisons/{id}")).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json
    }
}

/// The inventory of a small test machine.
pub fn inventory(name: &str) -> MachineInventory {
    MachineInventory {
        hostname: format!("{name}.lab"),
        cpu_model: "Intel(R) Xeon(R) Test CPU".into(),
        nr_cpu: 2,
        memory_bytes: 24 << 30,
        kernel_release: "6.1.0-test".into(),
        arch: "x86_64".into(),
        kvm_usable: false,
        pmu_usable: false,
        backends: vec![MeasurementMode::TcgIcount, MeasurementMode::Tcg],
        notes: vec![],
    }
}

/// A valid submission with `extra` fields merged in (a `null` removes one).
pub fn comparison_request(runs: u32, extra: Value) -> Value {
    let mut req = json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "mbox": MBOX,
        "workloads": ["open1"],
        "params": { "mode": "process", "nr_task": [1, 2], "seconds": 5, "warmup_seconds": 1 },
        "runs": runs,
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            if v.is_null() {
                req.as_object_mut().unwrap().remove(&k);
            } else {
                req[k] = v;
            }
        }
    }
    req
}

/// A plausible open1 run with `nr_task` tasks.
pub fn run_result(workload: &str, nr_task: u32) -> RunResult {
    let per_second = [1000 * u64::from(nr_task), 1010 * u64::from(nr_task)];
    RunResult {
        workload: workload.to_string(),
        mode: TaskMode::Process,
        nr_task,
        warmup_seconds: 1,
        seconds: 2,
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: per_second
            .iter()
            .map(|&total| SecondSample {
                total,
                min: total / u64::from(nr_task),
                max: total / u64::from(nr_task),
            })
            .collect(),
        metrics: vec![
            MetricValue {
                name: "will-it-scale.per_process_ops".into(),
                value: 1005.0,
            },
            MetricValue {
                name: "will-it-scale.workload".into(),
                value: (per_second[0] + per_second[1]) as f64,
            },
        ],
        series: vec![Series {
            name: format!("will-it-scale.{nr_task}.processes"),
            interval_seconds: 1.0,
            points: per_second.iter().map(|&p| p as f64).collect(),
        }],
        unsupported: vec!["perf-stat.ps.cycles".into()],
        profile_event: None,
        warnings: vec![],
    }
}
