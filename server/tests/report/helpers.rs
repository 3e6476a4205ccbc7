//! What only the report tests share, over the common test kit: a
//! comparison with uploaded runs, made the way production makes one (CI
//! submits through the API, a runner registers, claims each job, uploads a
//! RunResult per boot and finishes the job), dup1 runs of chosen speeds.

use std::ops::Deref;

use axum::http::{Method, StatusCode};
use patchperf_common::protocol::{JobSpec, MachineInventory};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, Side};
use patchperf_server::Config;
use patchperf_testkit::mbox::one_patch as mbox;
use sqlx::PgPool;

/// The kit's app over a test database, with the report tests' steps.
#[derive(Debug)]
pub struct TestApp(patchperf_testkit::TestApp);

impl Deref for TestApp {
    type Target = patchperf_testkit::TestApp;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl TestApp {
    pub async fn new(pool: PgPool) -> Self {
        Self::with_config(pool, Config::default()).await
    }

    pub async fn with_config(pool: PgPool, config: Config) -> Self {
        TestApp(patchperf_testkit::TestApp::with_config(pool, config).await)
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
        let a = self
            .send(
                Method::from_bytes(method.as_bytes()).unwrap(),
                uri,
                token,
                headers,
                body.map(axum::body::Body::from),
            )
            .await;
        (a.status, a.body)
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

    /// Runs the report builder until nothing is flagged, as the server's
    /// background builder does within a moment of each change; returns how
    /// many comparisons it took.
    pub async fn build_reports(&self) -> usize {
        let mut taken = 0;
        loop {
            match patchperf_server::domain::report::stored::build_stale(&self.state).await {
                Ok(0) => return taken,
                Ok(n) => taken += n,
                Err(e) => panic!("the report builder failed: {e}"),
            }
        }
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, String) {
        self.request("GET", uri, None, &[], None).await
    }

    pub async fn get_json(&self, uri: &str) -> serde_json::Value {
        let (status, body) = self.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Registers the runner machine `name` (a QEMU guest); returns its id.
    pub async fn register(&self, name: &str) -> i64 {
        let inventory = MachineInventory {
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
        };
        self.register_machine(name, &self.runner, inventory).await
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
            // Its runs are final (a tcg-icount comparison may grow while
            // undecided otherwise): one look at 95%.
            "max_runs": runs,
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
        for boot in &spec.boots {
            for &nr_task in nr_tasks {
                let result = run_result(nr_task, ops(boot.side, boot.seq, nr_task));
                self.upload(machine_id, spec, *boot, result).await;
            }
        }
        if finish {
            self.finish_done(machine_id, spec).await;
        }
    }

    /// Runs every job `machine` can claim, 1 task, with `ops` (see
    /// [`TestApp::run_job`]).
    pub async fn run_all(&self, machine_id: i64, ops: impl Fn(Side, u32, u32) -> f64 + Copy) {
        while let Some(spec) = self.claim(machine_id).await {
            self.run_job(machine_id, &spec, &[1], ops, true).await;
        }
    }
}

/// dup1 ops of a patch making it 5% faster, with 0.1% boot-to-boot noise.
pub fn faster(side: Side, seq: u32, _: u32) -> f64 {
    let base = 100_000.0 * (1.0 + 0.001 * f64::from(seq % 2));
    match side {
        Side::Base => base,
        Side::Patched => base * 1.05,
    }
}

/// A dup1 run with `ops` per task per second over 5 measured seconds,
/// as the bench harness would report it under -icount.
pub fn run_result(nr_task: u32, ops: f64) -> RunResult {
    let per_second: Vec<f64> = (0..5)
        .map(|s| ops * f64::from(nr_task) * (1.0 + 0.001 * f64::from(s)))
        .collect();
    let mut run = patchperf_testkit::runs::run_result("dup1", nr_task, per_second, ops);
    run.metrics.extend([
        MetricValue {
            name: format!("will-it-scale.{nr_task}.processes"),
            value: ops * f64::from(nr_task),
        },
        MetricValue {
            name: "perf-stat.overall.path-length".into(),
            value: 1e9 / ops,
        },
    ]);
    run
}

/// Collapses runs of whitespace, as a browser shows text.
pub fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
