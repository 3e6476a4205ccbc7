//! Turns the per-second counter deltas of a run into will-it-scale's
//! per-second lines and the run's metrics, named as 0-day names them.

use patchperf_common::metric;
use patchperf_common::run::{
    MeasurementMode, MetricValue, RunResult, SecondSample, Series, TaskMode,
};

/// will-it-scale's line for one second: the ops each task did in it.
pub fn second(per_task_ops: &[u64]) -> SecondSample {
    SecondSample {
        total: per_task_ops.iter().sum(),
        min: per_task_ops.iter().copied().min().unwrap_or(0),
        max: per_task_ops.iter().copied().max().unwrap_or(0),
    }
}

/// What was run, for the header of a [`RunResult`].
#[derive(Debug, Clone)]
pub struct RunShape {
    /// Workload name.
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Number of tasks.
    pub nr_task: u32,
    /// Warm-up seconds run and dropped.
    pub warmup_seconds: u32,
    /// How the numbers were measured.
    pub measurement: MeasurementMode,
}

/// The run's result from its measured seconds: `will-it-scale.per_<mode>_ops`
/// (mean over seconds of total ÷ nr_task), `will-it-scale.workload` (total
/// ops), `will-it-scale.<N>.<mode>s` (ops per second) and the per-second
/// totals as the series of that last name.
pub fn summarize(shape: &RunShape, samples: Vec<SecondSample>) -> RunResult {
    let seconds = samples.len();
    let total: u64 = samples.iter().map(|s| s.total).sum();
    let nr_task = f64::from(shape.nr_task.max(1));
    let (per_task, per_second) = if seconds == 0 {
        (0.0, 0.0)
    } else {
        let per_task = samples
            .iter()
            .map(|s| s.total as f64 / nr_task)
            .sum::<f64>()
            / seconds as f64;
        (per_task, total as f64 / seconds as f64)
    };
    let scaling = metric::wis_scaling(shape.nr_task, shape.mode);
    RunResult {
        workload: shape.workload.clone(),
        mode: shape.mode,
        nr_task: shape.nr_task,
        warmup_seconds: shape.warmup_seconds,
        seconds: u32::try_from(seconds).unwrap_or(u32::MAX),
        measurement: shape.measurement,
        kernel: None,
        metrics: vec![
            MetricValue {
                name: metric::wis_per_task_ops(shape.mode),
                value: per_task,
            },
            MetricValue {
                name: metric::WIS_WORKLOAD.to_string(),
                value: total as f64,
            },
            MetricValue {
                name: scaling.clone(),
                value: per_second,
            },
        ],
        series: vec![Series {
            name: scaling,
            interval_seconds: 1.0,
            points: samples.iter().map(|s| s.total as f64).collect(),
        }],
        samples,
        unsupported: Vec::new(),
        profile_event: None,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(mode: TaskMode, nr_task: u32) -> RunShape {
        RunShape {
            workload: "dup1".into(),
            mode,
            nr_task,
            warmup_seconds: 5,
            measurement: MeasurementMode::Host,
        }
    }

    #[test]
    fn a_second_is_the_slowest_the_fastest_and_the_sum_of_the_tasks() {
        assert_eq!(
            second(&[300, 100, 200]),
            SecondSample {
                total: 600,
                min: 100,
                max: 300
            }
        );
    }

    #[test]
    fn metrics_are_means_and_totals_over_the_measured_seconds() {
        // Two tasks, three seconds: totals 1000, 1200, 1400.
        let samples = vec![
            SecondSample {
                total: 1000,
                min: 400,
                max: 600,
            },
            SecondSample {
                total: 1200,
                min: 500,
                max: 700,
            },
            SecondSample {
                total: 1400,
                min: 700,
                max: 700,
            },
        ];
        let r = summarize(&shape(TaskMode::Process, 2), samples);
        // per task and second: 500, 600, 700 → mean 600
        assert_eq!(r.metric("will-it-scale.per_process_ops"), Some(600.0));
        assert_eq!(r.metric("will-it-scale.workload"), Some(3600.0));
        assert_eq!(r.metric("will-it-scale.2.processes"), Some(1200.0));
        assert_eq!(r.seconds, 3);
        assert_eq!(r.warmup_seconds, 5);
        assert_eq!(r.series.len(), 1);
        assert_eq!(r.series[0].name, "will-it-scale.2.processes");
        assert_eq!(r.series[0].points, [1000.0, 1200.0, 1400.0]);
    }

    #[test]
    fn thread_runs_are_named_per_thread() {
        let samples = vec![SecondSample {
            total: 90,
            min: 10,
            max: 50,
        }];
        let r = summarize(&shape(TaskMode::Thread, 3), samples);
        assert_eq!(r.metric("will-it-scale.per_thread_ops"), Some(30.0));
        assert_eq!(r.metric("will-it-scale.3.threads"), Some(90.0));
        assert_eq!(r.metric("will-it-scale.per_process_ops"), None);
    }
}
