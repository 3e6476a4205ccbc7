//! Synthetic run results shaped like a lab's: a handful of will-it-scale
//! metrics, ~40 perf-stat metrics and a few hundred perf-profile entries per
//! run, from a fixed seed so every build sees the same numbers. Shared by the
//! report benchmark (`benches/report_build.rs`) and the test that the report
//! reproduces its recorded JSON byte for byte (`tests/report_fixture.rs`).

use patchperf_common::report::{Comparison, ReportHeader, build_comparison, header_from_runs};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use patchperf_common::stats::VerdictPolicy;

mod rng;
use rng::Rng;

/// What one synthetic report looks like.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Runs on each side.
    pub runs: usize,
    /// perf-profile entries per run (before some fall below the cut-off).
    pub profile_entries: usize,
    /// Values rounded as the collectors print them (perf-profile to two
    /// decimals, counts to integers), some metrics constant across runs,
    /// and profile entries missing from some runs: rank ties everywhere.
    pub ties: bool,
    /// Seed of the numbers.
    pub seed: u64,
}

const PERF_STAT_EVENTS: [&str; 14] = [
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
    "cache-references",
    "cache-misses",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "dTLB-loads",
    "dTLB-load-misses",
    "iTLB-loads",
    "iTLB-load-misses",
    "L1-dcache-loads",
];

/// One metric's truth: the base mean, the patched mean, the run-to-run
/// spread and how values are written.
struct Truth {
    name: String,
    base: f64,
    patched: f64,
    spread: f64,
    decimals: Option<i32>,
    constant: bool,
    /// Chance that a run lacks it (a profile entry under the cut-off).
    missing: f64,
}

fn truths(shape: &Shape, rng: &mut Rng) -> Vec<Truth> {
    let mut out = Vec::new();
    let mut add = |name: String, level: f64, percent: bool, rng: &mut Rng| {
        let shift = if rng.chance(0.15) {
            1.0 + 0.1 * rng.normal()
        } else {
            1.0
        };
        let spread = level * 10f64.powf(-3.0 + 2.0 * rng.uniform());
        out.push(Truth {
            name,
            base: level,
            patched: level * shift,
            spread,
            decimals: shape.ties.then_some(if percent { 2 } else { 0 }),
            constant: shape.ties && rng.chance(0.1),
            missing: if shape.ties && percent && level < 0.2 {
                0.3
            } else {
                0.0
            },
        });
    };
    add("will-it-scale.per_process_ops".into(), 3.4e6, false, rng);
    add("will-it-scale.workload".into(), 8.8e8, false, rng);
    add("will-it-scale.256.processes".into(), 8.8e8, false, rng);
    for event in PERF_STAT_EVENTS {
        for kind in ["ps", "i", "total"] {
            let level = 10f64.powf(3.0 + 7.0 * rng.uniform());
            add(format!("perf-stat.{kind}.{event}"), level, false, rng);
        }
    }
    for derived in [
        "ipc",
        "cpi",
        "path-length",
        "branch-miss-rate%",
        "cache-miss-rate%",
    ] {
        let level = 10f64.powf(-1.0 + 3.0 * rng.uniform());
        add(
            format!("perf-stat.overall.{derived}"),
            level,
            derived.ends_with('%'),
            rng,
        );
    }
    for i in 0..shape.profile_entries {
        let kind = ["self", "children", "calltrace"][i % 3];
        let sym = format!("sym_{:03}", i / 3);
        let name = if kind == "calltrace" {
            format!("perf-profile.calltrace.cycles-pp.entry_SYSCALL_64.{sym}")
        } else {
            format!("perf-profile.{kind}.cycles-pp.{sym}")
        };
        // a few big entries, many small ones, as real profiles have
        let level = 30.0 * rng.uniform().powi(4) + 0.05;
        add(name, level, true, rng);
    }
    out
}

fn run(shape: &Shape, truths: &[Truth], patched: bool, nr_task: u32, rng: &mut Rng) -> RunResult {
    let mut metrics = Vec::with_capacity(truths.len() + 2);
    for t in truths {
        let mean = if patched { t.patched } else { t.base };
        if rng.chance(t.missing) {
            continue;
        }
        let mut value = if t.constant {
            mean
        } else {
            mean + t.spread * rng.normal()
        };
        if let Some(d) = t.decimals {
            let scale = 10f64.powi(d);
            value = (value * scale).round() / scale;
        }
        metrics.push(MetricValue {
            name: t.name.clone(),
            value: value.max(0.0),
        });
    }
    for (name, level) in [
        ("kernel.build_seconds", 440.0),
        ("kernel.boot_seconds", 3.0),
    ] {
        metrics.push(MetricValue {
            name: name.into(),
            value: level + rng.normal(),
        });
    }
    let mut unsupported = Vec::new();
    if shape.ties {
        unsupported.push("perf-stat.ps.topdown-retiring".to_string());
    }
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task,
        warmup_seconds: 5,
        seconds: 300,
        measurement: if shape.ties {
            MeasurementMode::TcgIcount
        } else {
            MeasurementMode::Kexec
        },
        kernel: None,
        samples: Vec::new(),
        metrics,
        series: Vec::new(),
        unsupported,
        profile_event: Some("cycles".into()),
        warnings: Vec::new(),
    }
}

/// The base and patched runs of one report.
pub fn runs(shape: &Shape, nr_task: u32) -> (Vec<RunResult>, Vec<RunResult>) {
    let mut rng = Rng::new(shape.seed);
    let truths = truths(shape, &mut rng);
    let base = (0..shape.runs)
        .map(|_| run(shape, &truths, false, nr_task, &mut rng))
        .collect();
    let patched = (0..shape.runs)
        .map(|_| run(shape, &truths, true, nr_task, &mut rng))
        .collect();
    (base, patched)
}

/// The report of those runs under the default policy.
pub fn build(base: &[RunResult], patched: &[RunResult]) -> Comparison {
    let header: ReportHeader = header_from_runs("lab-2sp", base, patched);
    build_comparison(header, base, patched, &VerdictPolicy::default()).unwrap()
}
