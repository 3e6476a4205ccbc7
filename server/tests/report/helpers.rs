//! A comparison with uploaded runs, made the way production makes one: CI
//! submits through the API, a runner registers, claims each job, uploads a
//! RunResult per boot and finishes the job. Requests go through the real
//! router (in-process), so every layer between HTTP and Postgres is real.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use patchperf_common::protocol::{
    ATTEMPT_HEADER, ClaimRequest, JobSpec, MACHINE_HEADER, MachineInventory, RegisterRequest,
    RegisterResponse, RunUpload,
};
use patchperf_common::run::{
    MeasurementMode, MetricValue, RunResult, SecondSample, Series, Side, TaskMode,
};
use patchperf_server::{AppState, Config, app, auth, db};
use sqlx::PgPool;
use tower::ServiceExt;

/// The app over a test database, with one CI and one runner token.
pub struct TestApp {
    pub state: AppState,
    pub ci: String,
    pub runner: String,
}

impl TestApp {
    pub async fn new(pool: PgPool) -> Self {
        let state = AppState::new(pool, Config::default());
        let mut tokens = Vec::new();
        for kind in [auth::TokenKind::Ci, auth::TokenKind::Runner] {
            let token = auth::generate(kind);
            let mut conn = state.db.acquire().await.unwrap();
            db::tokens::insert(
                &mut conn,
                kind.as_str(),
                &format!("test {kind}"),
                &patchperf_common::digest::sha256_hex(token.as_bytes()),
            )
            .await
            .unwrap();
            tokens.push(token);
        }
        let runner = tokens.pop().unwrap();
        let ci = tokens.pop().unwrap();
        TestApp { state, ci, runner }
    }

    /// One request through the whole router; returns status and body.
    pub async fn request(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        headers: &[(&str, String)],
        body: Option<String>,
    ) -> (StatusCode, String) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let req = match body {
            Some(b) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(b)),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let res = app(self.state.clone()).oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    /// A dup1 submission of `subject` with 1 task, 3 runs, no machine named;
    /// returns the answer as it comes, for tests of what the server refuses
    /// or reports about it. `extra` fields are added to the body.
    pub async fn submit_raw(
        &self,
        subject: &str,
        extra: serde_json::Value,
    ) -> (StatusCode, String) {
        let mut body = serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": mbox(subject),
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        self.request(
            "POST",
            "/api/v1/comparisons",
            Some(&self.ci),
            &[],
            Some(body.to_string()),
        )
        .await
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, String) {
        self.request("GET", uri, None, &[], None).await
    }

    pub async fn get_json(&self, uri: &str) -> serde_json::Value {
        let (status, body) = self.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Registers the runner machine `name`; returns its id.
    pub async fn register(&self, name: &str) -> i64 {
        let req = RegisterRequest {
            name: name.into(),
            inventory: MachineInventory {
                hostname: format!("{name}.lab"),
                cpu_model: "QEMU Virtual CPU version 2.5+".into(),
                nr_cpu: 2,
                memory_bytes: 4 << 30,
                kernel_release: "6.1.0-test".into(),
                arch: "x86_64".into(),
                kvm_usable: false,
                pmu_usable: false,
                backends: vec![MeasurementMode::TcgIcount],
                notes: vec!["nested KVM unusable".into()],
            },
        };
        let (status, body) = self
            .request(
                "POST",
                "/api/v1/runner/register",
                Some(&self.runner),
                &[],
                Some(serde_json::to_string(&req).unwrap()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        serde_json::from_str::<RegisterResponse>(&body)
            .unwrap()
            .machine_id
    }

    /// Submits a comparison of `subject`'s patch on `machine`; returns its id.
    pub async fn submit(&self, subject: &str, machine: &str, nr_task: &[u32], runs: u32) -> i64 {
        let body = serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": mbox(subject),
            "workloads": ["dup1"],
            "params": {
                "mode": "process",
                "nr_task": nr_task,
                "seconds": 5,
                "warmup_seconds": 1,
            },
            "runs": runs,
            "backend": "tcg-icount",
            "machine": machine,
            "order_seed": 7,
        });
        self.post_comparison(body).await
    }

    /// Like [`TestApp::submit`] with 1 task, and more boots allowed while
    /// undecided, up to `max_runs` a side.
    pub async fn submit_growing(
        &self,
        subject: &str,
        machine: &str,
        runs: u32,
        max_runs: u32,
    ) -> i64 {
        let body = serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": mbox(subject),
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": runs,
            "max_runs": max_runs,
            "backend": "tcg-icount",
            "machine": machine,
            "order_seed": 7,
        });
        self.post_comparison(body).await
    }

    /// POSTs a comparison submission; returns the new comparison's id.
    async fn post_comparison(&self, body: serde_json::Value) -> i64 {
        let (status, body) = self
            .request(
                "POST",
                "/api/v1/comparisons",
                Some(&self.ci),
                &[],
                Some(body.to_string()),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
            .as_i64()
            .unwrap()
    }

    /// Submits an A/A comparison (both sides the base kernel) of dup1 on
    /// `machine`; returns its id.
    pub async fn submit_aa(&self, machine: &str, runs: u32) -> i64 {
        let body = serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "aa": true,
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": runs,
            "backend": "tcg-icount",
            "machine": machine,
            "order_seed": 11,
        });
        self.post_comparison(body).await
    }

    /// Claims the next job for `machine_id`.
    pub async fn claim(&self, machine_id: i64) -> Option<JobSpec> {
        let req = ClaimRequest {
            machine_id,
            wait_seconds: 0,
        };
        let (status, body) = self
            .request(
                "POST",
                "/api/v1/jobs/claim",
                Some(&self.runner),
                &[],
                Some(serde_json::to_string(&req).unwrap()),
            )
            .await;
        match status {
            StatusCode::OK => Some(serde_json::from_str(&body).unwrap()),
            StatusCode::NO_CONTENT => None,
            other => panic!("claim: {other} {body}"),
        }
    }

    /// Runs a job the way a runner would: one RunResult per boot and
    /// nr_task from `ops(side, boot seq, nr_task)`, then finishes it.
    pub async fn run_job(
        &self,
        machine_id: i64,
        spec: &JobSpec,
        nr_tasks: &[u32],
        ops: impl Fn(Side, u32, u32) -> f64,
        finish: bool,
    ) {
        let lease = [
            (MACHINE_HEADER, machine_id.to_string()),
            (ATTEMPT_HEADER, spec.attempt.to_string()),
        ];
        for boot in &spec.boots {
            for &nr_task in nr_tasks {
                let upload = RunUpload {
                    boot: *boot,
                    result: run_result(nr_task, ops(boot.side, boot.seq, nr_task)),
                };
                let (status, body) = self
                    .request(
                        "POST",
                        &format!("/api/v1/jobs/{}/runs", spec.job_id),
                        Some(&self.runner),
                        &lease,
                        Some(serde_json::to_string(&upload).unwrap()),
                    )
                    .await;
                assert!(status.is_success(), "upload: {status} {body}");
            }
        }
        if finish {
            let (status, body) = self
                .request(
                    "POST",
                    &format!("/api/v1/jobs/{}/finish", spec.job_id),
                    Some(&self.runner),
                    &lease,
                    Some(r#"{"outcome":"done","log_tail":"guest powered off"}"#.into()),
                )
                .await;
            assert!(status.is_success(), "finish: {status} {body}");
        }
    }
}

/// A one-patch series as `git format-patch` writes it.
pub fn mbox(subject: &str) -> String {
    format!(
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
         From: Kernel Hacker <kh@example.org>\n\
         Date: Mon, 5 Jan 2026 10:00:00 +0000\n\
         Subject: {subject}\n\
         Message-ID: <20260105100000.1-kh@example.org>\n\
         \n\
         Make dup faster.\n\
         \n\
         Signed-off-by: Kernel Hacker <kh@example.org>\n\
         ---\n \
         fs/file.c | 2 +-\n\
         \n\
         diff --git a/fs/file.c b/fs/file.c\n\
         --- a/fs/file.c\n\
         +++ b/fs/file.c\n\
         @@ -1,1 +1,1 @@\n\
         -old\n\
         +new\n\
         -- \n\
         2.39.5\n"
    )
}

/// A dup1 run with `ops` per task per second over 5 measured seconds,
/// as the bench harness would report it under -icount.
pub fn run_result(nr_task: u32, ops: f64) -> RunResult {
    let per_second: Vec<f64> = (0..5)
        .map(|s| ops * f64::from(nr_task) * (1.0 + 0.001 * f64::from(s)))
        .collect();
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task,
        warmup_seconds: 1,
        seconds: 5,
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: per_second
            .iter()
            .map(|&t| SecondSample {
                total: t as u64,
                min: (t / f64::from(nr_task)) as u64,
                max: (t / f64::from(nr_task)) as u64,
            })
            .collect(),
        metrics: vec![
            MetricValue {
                name: "will-it-scale.per_process_ops".into(),
                value: ops,
            },
            MetricValue {
                name: "will-it-scale.workload".into(),
                value: per_second.iter().sum(),
            },
            MetricValue {
                name: format!("will-it-scale.{nr_task}.processes"),
                value: ops * f64::from(nr_task),
            },
            MetricValue {
                name: "perf-stat.overall.path-length".into(),
                value: 1e9 / ops,
            },
        ],
        series: vec![Series {
            name: format!("will-it-scale.{nr_task}.processes"),
            interval_seconds: 1.0,
            points: per_second,
        }],
        unsupported: vec!["perf-stat.ps.cycles".into()],
        profile_event: None,
        warnings: Vec::new(),
    }
}

/// Collapses runs of whitespace, as a browser shows text.
pub fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
