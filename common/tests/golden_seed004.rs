//! Golden test: the numbers of 0-day's report in seed 004 (3 runs a side,
//! chosen to give its means and spreads, see fixtures/seed004_runs.tsv)
//! produce the commit block and table of that report byte for byte.

use patchperf_common::report::text::{TextOptions, table};
use patchperf_common::report::{KernelLabel, ReportHeader, build_comparison};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use patchperf_common::stats::VerdictPolicy;

const RUNS: &str = include_str!("fixtures/seed004_runs.tsv");
const EXPECTED: &str = include_str!("fixtures/seed004_table.txt");

fn run(metrics: Vec<MetricValue>) -> RunResult {
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task: 256,
        warmup_seconds: 0,
        seconds: 300,
        measurement: MeasurementMode::Kexec,
        kernel: None,
        samples: Vec::new(),
        metrics,
        series: Vec::new(),
        unsupported: Vec::new(),
        profile_event: Some("cycles".into()),
        warnings: Vec::new(),
    }
}

/// Three base and three patched runs from the fixture's columns.
fn seed_runs() -> (Vec<RunResult>, Vec<RunResult>) {
    let mut base = vec![Vec::new(), Vec::new(), Vec::new()];
    let mut patched = vec![Vec::new(), Vec::new(), Vec::new()];
    for line in RUNS.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "{line}");
        for (side, values) in [(&mut base, cols[1]), (&mut patched, cols[2])] {
            let values: Vec<f64> = values.split(',').map(|v| v.parse().unwrap()).collect();
            assert_eq!(values.len(), 3);
            for (run, value) in side.iter_mut().zip(values) {
                run.push(MetricValue {
                    name: cols[0].to_string(),
                    value,
                });
            }
        }
    }
    (
        base.into_iter().map(run).collect(),
        patched.into_iter().map(run).collect(),
    )
}

fn header() -> ReportHeader {
    ReportHeader {
        machine: "lkp-srf-2sp1".into(),
        machine_description: None,
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task: 256,
        nr_task_requested: Some("100%".into()),
        measurement: Some(MeasurementMode::Kexec),
        base: KernelLabel {
            id: "5f30e082ab8b3431".into(),
            subject: Some("Merge branch 'vfs.iomap' into vfs.all".into()),
        },
        patched: KernelLabel {
            id: "f1139c8e66d5c618aad04a93a2378ad9586464f9".into(),
            subject: Some(
                "fs/file.c: remove sanity_check and add likely/unlikely in alloc_fd()".into(),
            ),
        },
        base_source: None,
        patch_subject: None,
        name: None,
        compiler: None,
        config: None,
        profile_event: Some("cycles".into()),
        report_url: None,
        delta_source: None,
        delta_aa: None,
        code_layout: None,
        looks: None,
        runs_steps: Vec::new(),
        runs_from_steps: None,
        moved_by: None,
    }
}

#[test]
fn seed_004_table_is_reproduced_byte_for_byte() {
    let (base, patched) = seed_runs();
    let c = build_comparison(header(), &base, &patched, &VerdictPolicy::default()).unwrap();
    let got = table(&c, &TextOptions { all_rows: true });
    let expected: String = EXPECTED
        .lines()
        .filter(|l| !l.starts_with("# "))
        .map(|l| format!("{l}\n"))
        .collect();
    if got != expected {
        for (i, (g, e)) in got.lines().zip(expected.lines()).enumerate() {
            if g != e {
                panic!("line {} differs:\n got: {g:?}\nwant: {e:?}", i + 1);
            }
        }
        panic!(
            "{} lines, expected {}",
            got.lines().count(),
            expected.lines().count()
        );
    }
}

#[test]
fn every_seed_row_has_our_statistics_too() {
    let (base, patched) = seed_runs();
    let c = build_comparison(header(), &base, &patched, &VerdictPolicy::default()).unwrap();
    assert_eq!(c.metrics.len(), 73);
    assert_eq!((c.base_runs, c.patched_runs), (3, 3));
    // all 73 metrics have 3 + 3 runs, so all enter the false-discovery control
    assert_eq!(c.tested_metrics(), 73);
    for m in &c.metrics {
        assert!(m.welch.is_some() && m.mann_whitney.is_some() && m.q.is_some());
        let json = serde_json::to_string(m).unwrap();
        assert!(
            !json.contains("NaN") && !json.contains("null,\"patched"),
            "{json}"
        );
    }
    let ops = c.metric("will-it-scale.per_process_ops").unwrap();
    // 3436082.5 → 3477810.5 with ±1% spreads: +1.2%, but 3 runs of 1% noise
    // cannot show a 1.2% change against a 1% threshold
    assert!((ops.change.unwrap() - 1.214).abs() < 0.01);
}
