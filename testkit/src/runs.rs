//! RunResults as the bench harness reports them under `-icount`, made up
//! for a test or recorded from real kernels (`recorded`).

use std::path::Path;

use patchperf_common::run::{
    MeasurementMode, MetricValue, RunResult, SecondSample, Series, TaskMode,
};

/// A process-mode run of `workload` with `nr_task` tasks: `per_second`
/// operations of all tasks in each measured second (one second of warm-up
/// before), `ops` a task a second as its headline metric, the total as
/// `will-it-scale.workload`.
pub fn run_result(workload: &str, nr_task: u32, per_second: Vec<f64>, ops: f64) -> RunResult {
    let tasks = f64::from(nr_task);
    RunResult {
        workload: workload.to_string(),
        mode: TaskMode::Process,
        nr_task,
        warmup_seconds: 1,
        seconds: u32::try_from(per_second.len()).unwrap(),
        measurement: MeasurementMode::TcgIcount,
        kernel: None,
        samples: per_second
            .iter()
            .map(|&t| SecondSample {
                total: t as u64,
                min: (t / tasks) as u64,
                max: (t / tasks) as u64,
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

/// The runs of a recorded seed comparison under
/// `runner/tests/fixtures/seeds/<name>/` (see its README): the base
/// kernel's and the patched kernel's, each in file name order.
pub fn recorded(name: &str) -> (Vec<RunResult>, Vec<RunResult>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../runner/tests/fixtures/seeds")
        .join(name);
    let side = |side: &str| -> Vec<RunResult> {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(side))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(side).display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
            })
            .collect()
    };
    (side("base"), side("patched"))
}
