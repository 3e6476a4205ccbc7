//! Turns perf stat's interval readings into 0-day's `perf-stat.*` metrics.
//!
//! For every event perf counted:
//! - `perf-stat.total.<event>`: the sum of the interval counts (the whole
//!   counted window, including the short last interval perf prints when it
//!   is stopped);
//! - `perf-stat.ps.<event>`: that total ÷ the seconds perf counted (its last
//!   time stamp), so it is a rate over exactly the window the counts cover;
//! - `perf-stat.i.<event>`: the mean over intervals of each interval's rate
//!   (count ÷ interval length). 0-day's `stats/perf-stat` takes the mean of
//!   per-interval counts of 1 s intervals, which is the same number. An
//!   interval shorter than half the nominal length (the tail perf prints when
//!   it is interrupted) is left out here because a rate over a few
//!   milliseconds is noise; its count still goes into the total. The rates of
//!   the intervals used are also the run's `perf-stat.i.<event>` series.
//!
//! Derived metrics, as 0-day defines them: `ipc` = instructions ÷ cycles,
//! `cpi` = cycles ÷ instructions, `branch-miss-rate%` = 100 × branch-misses
//! ÷ branch-instructions, `cache-miss-rate%` = 100 × cache-misses ÷
//! cache-references. `perf-stat.overall.<m>` is computed from the totals,
//! `perf-stat.i.<m>` is the mean of the per-interval values, and
//! `perf-stat.overall.path-length` is instructions per operation. 0-day
//! divides total instructions by `will-it-scale.workload`; here the two rates
//! are divided instead (`perf-stat.ps.instructions` ÷ operations per measured
//! second), which is the same number when both cover the same seconds and
//! stays right when perf, slow to start on a loaded machine, counted a little
//! less than the measured window.
//!
//! On hybrid CPUs perf prints each event once per core type
//! (`cpu_core/cycles/`, `cpu_atom/cycles/`); those are kept as separate
//! events, and the derived metrics, which need the plain names, are not
//! computed for them.
//!
//! An event perf could not count in any interval (`<not supported>` or
//! `<not counted>`) produces no number at all: the metrics it would have
//! given, and the derived metrics that need it, are listed as unsupported. An
//! event counted in some intervals only gets its `i.` mean from those
//! intervals and a warning, but no total, rate or overall metric, since those
//! would silently undercount.

use patchperf_common::metric;
use patchperf_common::run::{MetricValue, Series};

use super::parse::{Interval, Reading};

/// Below this running percentage a count is mostly perf's extrapolation, and
/// the run gets a warning saying so.
pub const LOW_RUNNING_PERCENT: f64 = 50.0;

/// A derived metric: `scale × numerator ÷ denominator`.
#[derive(Debug, Clone, Copy)]
struct Ratio {
    name: &'static str,
    numerator: &'static str,
    denominator: &'static str,
    scale: f64,
}

const RATIOS: &[Ratio] = &[
    Ratio {
        name: "ipc",
        numerator: "instructions",
        denominator: "cycles",
        scale: 1.0,
    },
    Ratio {
        name: "cpi",
        numerator: "cycles",
        denominator: "instructions",
        scale: 1.0,
    },
    Ratio {
        name: "branch-miss-rate%",
        numerator: "branch-misses",
        denominator: "branch-instructions",
        scale: 100.0,
    },
    Ratio {
        name: "cache-miss-rate%",
        numerator: "cache-misses",
        denominator: "cache-references",
        scale: 100.0,
    },
];

/// Everything perf stat contributes to a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatMetrics {
    /// `perf-stat.{ps,i,total,overall}.*` values.
    pub metrics: Vec<MetricValue>,
    /// `perf-stat.i.*` per-interval series.
    pub series: Vec<Series>,
    /// Metric names that cannot be had on this machine.
    pub unsupported: Vec<String>,
    /// Things the reader of the numbers should know (multiplexing, gaps).
    pub warnings: Vec<String>,
}

/// What one event gave over the whole run.
#[derive(Debug, Clone, Default)]
struct EventSummary {
    /// Per interval: the count, if perf counted it.
    counts: Vec<Option<f64>>,
    lowest_running_percent: Option<f64>,
    not_supported: bool,
}

impl EventSummary {
    fn counted_everywhere(&self) -> bool {
        !self.counts.is_empty() && self.counts.iter().all(Option::is_some)
    }

    fn counted_anywhere(&self) -> bool {
        self.counts.iter().any(Option::is_some)
    }

    fn total(&self) -> Option<f64> {
        if self.counted_everywhere() {
            Some(self.counts.iter().flatten().sum())
        } else {
            None
        }
    }
}

/// Derives the `perf-stat.*` metrics from perf's intervals.
///
/// `interval_seconds` is the nominal interval (`-I` ÷ 1000);
/// `ops_per_second` is `will-it-scale.workload` ÷ measured seconds when the
/// run has them.
pub fn derive(
    intervals: &[Interval],
    interval_seconds: f64,
    ops_per_second: Option<f64>,
) -> StatMetrics {
    let mut out = StatMetrics::default();
    if intervals.is_empty() {
        out.warnings
            .push("perf stat printed no intervals: no perf-stat metrics for this run".into());
        return out;
    }

    let lengths = interval_lengths(intervals);
    // Intervals long enough to give a meaningful per-second rate.
    let full: Vec<usize> = (0..intervals.len())
        .filter(|&k| lengths[k] >= 0.5 * interval_seconds && lengths[k] > 0.0)
        .collect();
    let elapsed = intervals.last().map_or(0.0, |last| last.end_seconds);
    let events = summarize(intervals);
    let mut multiplexed = Vec::new();

    for (event, summary) in &events {
        if !summary.counted_anywhere() {
            if !summary.not_supported {
                out.warnings.push(format!(
                    "perf stat: {event} was opened but never counted (<not counted>): \
                     its metrics are listed as unsupported"
                ));
            }
            out.unsupported.extend([
                metric::perf_stat_ps(event),
                metric::perf_stat_i(event),
                metric::perf_stat_total(event),
            ]);
            continue;
        }
        let rates: Vec<Option<f64>> = full
            .iter()
            .map(|&k| summary.counts[k].map(|count| count / lengths[k]))
            .collect();
        push_interval_mean(
            &mut out,
            metric::perf_stat_i(event),
            &rates,
            interval_seconds,
        );
        match summary.total() {
            Some(total) => {
                push(&mut out.metrics, metric::perf_stat_total(event), total);
                if elapsed > 0.0 {
                    push(
                        &mut out.metrics,
                        metric::perf_stat_ps(event),
                        total / elapsed,
                    );
                }
            }
            None => {
                let missing = summary.counts.iter().filter(|c| c.is_none()).count();
                out.warnings.push(format!(
                    "perf stat: {event} was not counted in {missing} of {} intervals; \
                     perf-stat.total/ps/overall metrics that need it are left out",
                    summary.counts.len()
                ));
            }
        }
        let lowest = summary.lowest_running_percent.unwrap_or(100.0);
        if lowest < LOW_RUNNING_PERCENT {
            multiplexed.push(format!("{event} {lowest:.0}%"));
        }
    }
    if !multiplexed.is_empty() {
        out.warnings.push(format!(
            "perf stat: more events than PMU counters, so the kernel multiplexed them and \
             some ran only part of the time (lowest share per event: {}); their counts are \
             perf's estimates, scaled up by enabled ÷ running time",
            multiplexed.join(", ")
        ));
    }

    for ratio in RATIOS {
        derive_ratio(&mut out, &events, ratio, &full, interval_seconds);
    }
    derive_path_length(&mut out, &events, elapsed, ops_per_second);
    out
}

/// Length of each interval in seconds (the first one starts at 0).
fn interval_lengths(intervals: &[Interval]) -> Vec<f64> {
    let mut previous = 0.0;
    intervals
        .iter()
        .map(|interval| {
            let length = interval.end_seconds - previous;
            previous = interval.end_seconds;
            length
        })
        .collect()
}

/// Per event, in the order perf first printed them: its count in each interval.
fn summarize(intervals: &[Interval]) -> Vec<(String, EventSummary)> {
    let mut events: Vec<(String, EventSummary)> = Vec::new();
    for interval in intervals {
        for (event, _) in &interval.readings {
            if !events.iter().any(|(name, _)| name == event) {
                events.push((event.clone(), EventSummary::default()));
            }
        }
    }
    for (event, summary) in &mut events {
        for interval in intervals {
            let count = match interval.reading(event) {
                Some(Reading::Counted {
                    value,
                    running_percent,
                }) => {
                    let lowest = summary
                        .lowest_running_percent
                        .get_or_insert(running_percent);
                    *lowest = lowest.min(running_percent);
                    Some(value)
                }
                Some(Reading::NotSupported) => {
                    summary.not_supported = true;
                    None
                }
                Some(Reading::NotCounted) | None => None,
            };
            summary.counts.push(count);
        }
    }
    events
}

/// Pushes the mean of the defined values as a metric, and all of them as a
/// series when every interval has one.
fn push_interval_mean(
    out: &mut StatMetrics,
    name: String,
    values: &[Option<f64>],
    interval_seconds: f64,
) {
    let defined: Vec<f64> = values.iter().flatten().copied().collect();
    if defined.is_empty() {
        return;
    }
    let mean = defined.iter().sum::<f64>() / defined.len() as f64;
    if defined.len() == values.len() && defined.iter().all(|v| v.is_finite()) {
        out.series.push(Series {
            name: name.clone(),
            interval_seconds,
            points: defined,
        });
    }
    push(&mut out.metrics, name, mean);
}

fn derive_ratio(
    out: &mut StatMetrics,
    events: &[(String, EventSummary)],
    ratio: &Ratio,
    full: &[usize],
    interval_seconds: f64,
) {
    let find = |name: &str| {
        events
            .iter()
            .find(|(event, _)| event == name)
            .map(|(_, s)| s)
    };
    let (Some(numerator), Some(denominator)) = (find(ratio.numerator), find(ratio.denominator))
    else {
        // Not asked for: nothing to derive and nothing to report.
        return;
    };
    if !numerator.counted_anywhere() || !denominator.counted_anywhere() {
        out.unsupported.extend([
            metric::perf_stat_i(ratio.name),
            metric::perf_stat_overall(ratio.name),
        ]);
        return;
    }
    let per_interval: Vec<Option<f64>> = full
        .iter()
        .map(|&k| match (numerator.counts[k], denominator.counts[k]) {
            (Some(n), Some(d)) if d > 0.0 => Some(ratio.scale * n / d),
            _ => None,
        })
        .collect();
    push_interval_mean(
        out,
        metric::perf_stat_i(ratio.name),
        &per_interval,
        interval_seconds,
    );
    if let (Some(n), Some(d)) = (numerator.total(), denominator.total()) {
        if d > 0.0 {
            push(
                &mut out.metrics,
                metric::perf_stat_overall(ratio.name),
                ratio.scale * n / d,
            );
        }
    }
}

fn derive_path_length(
    out: &mut StatMetrics,
    events: &[(String, EventSummary)],
    elapsed: f64,
    ops_per_second: Option<f64>,
) {
    let Some((_, instructions)) = events.iter().find(|(event, _)| event == "instructions") else {
        return;
    };
    let name = metric::perf_stat_overall("path-length");
    if !instructions.counted_anywhere() {
        out.unsupported.push(name);
        return;
    }
    if let (Some(total), Some(ops)) = (instructions.total(), ops_per_second) {
        if ops > 0.0 && elapsed > 0.0 {
            push(&mut out.metrics, name, total / elapsed / ops);
        }
    }
}

/// A warning when perf counted noticeably less time than the measured
/// seconds (it took long to start on a loaded machine), so readers know the
/// perf-stat numbers cover part of the window; `None` otherwise.
pub fn window_warning(perf_seconds: f64, measured_seconds: f64) -> Option<String> {
    let shortfall = measured_seconds - perf_seconds;
    (shortfall > (0.05 * measured_seconds).max(0.5)).then(|| {
        format!(
            "perf stat counted {perf_seconds:.2} s of the {measured_seconds} measured \
             seconds (it was slow to start); its rates cover that part only"
        )
    })
}

/// Adds a metric unless its value is not a finite number (JSON cannot carry
/// those, and a report cannot compare them).
fn push(metrics: &mut Vec<MetricValue>, name: String, value: f64) {
    if value.is_finite() {
        metrics.push(MetricValue { name, value });
    }
}
