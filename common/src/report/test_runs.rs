//! Run results for the report's unit tests: one dup1 run in the
//! deterministic mode, carrying just the metrics a test names.

use crate::report::Comparison;
use crate::report::build::{build_comparison, header_from_runs};
use crate::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use crate::stats::VerdictPolicy;

pub(crate) fn run(metrics: &[(&str, f64)]) -> RunResult {
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Process,
        nr_task: 2,
        warmup_seconds: 2,
        seconds: 10,
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: Vec::new(),
        metrics: metrics
            .iter()
            .map(|&(name, value)| MetricValue {
                name: name.into(),
                value,
            })
            .collect(),
        series: Vec::new(),
        unsupported: Vec::new(),
        profile_event: None,
        warnings: Vec::new(),
    }
}

/// The report of `base` against `patched` on machine `machine`, judged by
/// the default policy.
pub(crate) fn compare(machine: &str, base: &[RunResult], patched: &[RunResult]) -> Comparison {
    build_comparison(
        header_from_runs(machine, base, patched),
        base,
        patched,
        &VerdictPolicy::default(),
    )
    .expect("runs of one workload, nr_task and mode")
}

/// The report of `nr_task` tasks whose runs go from `base` to `patched`
/// ops (`will-it-scale.per_process_ops`), three boots a side ±0.1% apart.
pub(crate) fn report(nr_task: u32, base: f64, patched: f64) -> Comparison {
    let runs = |v: f64| -> Vec<RunResult> {
        [0.999, 1.0, 1.001]
            .iter()
            .map(|f| {
                let mut r = run(&[("will-it-scale.per_process_ops", v * f)]);
                r.nr_task = nr_task;
                r
            })
            .collect()
    };
    compare("lab", &runs(base), &runs(patched))
}
