//! A small lab's data, made as production makes it (CI submits, a runner
//! registers, claims each job, uploads a run per boot with perf-stat and
//! perf-profile values and per-second series, finishes it; the builder
//! stores the report), and the answers a reader gets for it.

use patchperf_common::protocol::MachineInventory;
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, Side};
use patchperf_testkit::TestApp;
use patchperf_testkit::mbox::one_patch;
use sqlx::PgPool;

/// A dup1 run under icount: `ops` a second, 5 measured seconds, three
/// perf-stat values and a small perf profile whose shares the patch moves.
fn run(side: Side, seq: u32) -> RunResult {
    let ops = 100_000.0 * (1.0 + 0.001 * f64::from(seq % 3));
    let ops = if side == Side::Patched {
        ops * 1.05
    } else {
        ops
    };
    let per_second = (0..5).map(|s| ops * (1.0 + 0.001 * f64::from(s))).collect();
    let mut r = patchperf_testkit::runs::run_result("dup1", 1, per_second, ops);
    let share = if side == Side::Patched { 10.0 } else { 12.0 } + 0.01 * f64::from(seq);
    r.metrics.extend(
        [
            ("perf-stat.overall.path-length", 1e9 / ops),
            ("perf-stat.ps.instructions", 4e9 + f64::from(seq)),
            ("perf-stat.overall.ipc", 1.5),
            ("perf-profile.children.cycles-pp.do_dup2", share),
            ("perf-profile.self.cycles-pp.fput", 100.0 - share - 50.0),
            (
                "perf-profile.calltrace.cycles-pp.entry_SYSCALL_64.do_syscall_64.__x64_sys_dup",
                share / 2.0,
            ),
        ]
        .map(|(name, value)| MetricValue {
            name: name.into(),
            value,
        }),
    );
    r.profile_event = Some("cpu-clock".into());
    r
}

/// Fills `pool` (migrated) with a machine and two finished comparisons of
/// 3 boots a side, their reports built and stored; returns the app and
/// the comparisons' ids.
pub async fn fill(pool: PgPool) -> (TestApp, Vec<i64>) {
    let app = TestApp::new(pool).await;
    let inventory = MachineInventory {
        hostname: "rack-7.lab".into(),
        cpu_model: "QEMU Virtual CPU version 2.5+".into(),
        nr_cpu: 2,
        memory_bytes: 4 << 30,
        kernel_release: "6.1.0-test".into(),
        arch: "x86_64".into(),
        kvm_usable: false,
        pmu_usable: false,
        backends: vec![MeasurementMode::TcgIcount],
        notes: Vec::new(),
    };
    let machine = app.register_machine("rack-7", &app.runner, inventory).await;
    let mut ids = Vec::new();
    for subject in ["fs: make dup cheaper", "fs: and cheaper still"] {
        let body = serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": one_patch(subject),
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
            "backend": "tcg-icount",
            "machine": "rack-7",
            "order_seed": 7,
        });
        ids.push(app.post_comparison(body).await);
        while let Some(job) = app.claim(machine).await {
            for boot in &job.boots {
                app.upload(machine, &job, *boot, run(boot.side, boot.seq))
                    .await;
            }
            app.finish_done(machine, &job).await;
        }
    }
    build_reports(&app).await;
    (app, ids)
}

/// An A/A comparison of dup1 on rack-7, run to its end: when it
/// finishes, the machine's noise floor changes, and with it what every
/// report of the machine is built from.
pub async fn run_aa(app: &TestApp) -> i64 {
    let body = serde_json::json!({
        "base": { "kind": "tarball", "name": "linux-source-6.1" },
        "aa": true,
        "workloads": ["dup1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
        "runs": 3,
        "backend": "tcg-icount",
        "machine": "rack-7",
        "order_seed": 11,
    });
    let id = app.post_comparison(body).await;
    let machine: i64 = sqlx::query_scalar("SELECT id FROM machines WHERE name = 'rack-7'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    while let Some(job) = app.claim(machine).await {
        for boot in &job.boots {
            app.upload(machine, &job, *boot, run(Side::Base, boot.seq))
                .await;
        }
        app.finish_done(machine, &job).await;
    }
    id
}

/// Runs the report builder until nothing is marked, as `serve`'s
/// background builder does a moment after each change.
pub async fn build_reports(app: &TestApp) {
    while patchperf_server::domain::report::stored::build_stale(&app.state)
        .await
        .unwrap()
        > 0
    {}
}

/// What readers get: (path, status, body) of the dashboard, the machine's
/// page, and each comparison's page, metrics page, profile page, JSON,
/// text report and metrics CSV.
pub async fn answers(app: &TestApp, ids: &[i64]) -> Vec<(String, u16, String)> {
    let mut paths = vec!["/".to_string(), "/machines/rack-7".to_string()];
    for id in ids {
        for tail in ["", "/metrics", "/profile", "/metrics.csv"] {
            paths.push(format!("/comparisons/{id}{tail}"));
        }
        paths.push(format!("/api/v1/comparisons/{id}"));
        paths.push(format!("/api/v1/comparisons/{id}/report.txt"));
    }
    let mut out = Vec::new();
    for path in paths {
        let a = app.get(&path).await;
        out.push((path, a.status.as_u16(), a.body));
    }
    out
}

/// Asserts two sets of answers are the same byte for byte, naming the
/// first path that differs and where.
pub fn assert_same(before: &[(String, u16, String)], after: &[(String, u16, String)]) {
    assert_eq!(before.len(), after.len());
    for ((path, s1, b1), (_, s2, b2)) in before.iter().zip(after) {
        assert_eq!(s1, s2, "{path}: status");
        assert_eq!(*s1, 200, "{path}: {b1}");
        if b1 != b2 {
            let at = b1
                .bytes()
                .zip(b2.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(b1.len().min(b2.len()));
            let from = at.saturating_sub(80);
            let around = |b: &str| {
                String::from_utf8_lossy(&b.as_bytes()[from..(at + 80).min(b.len())]).into_owned()
            };
            panic!(
                "{path} differs at byte {at}:\n  before …{}\n  after  …{}",
                around(b1),
                around(b2)
            );
        }
    }
}
