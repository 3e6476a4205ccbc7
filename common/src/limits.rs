//! The largest numbers a run may carry. A [`RunResult`](crate::run::RunResult)
//! is checked against these before it is stored (the server, at upload) and
//! may be checked before it is sent (the runner), so nothing a report, a
//! plot or an `integer` column reads can be out of range, however the run
//! was produced.
//!
//! Each bound sits well above anything a real will-it-scale or perf run
//! produces and well below where arithmetic on it breaks (an `int` column,
//! `f64` sums and spans, plotting an axis).

/// Measured seconds of one run: an hour. Submissions ask for at most 600
/// (`params.seconds`); well inside an `int` column.
pub const MAX_SECONDS: u32 = 3_600;

/// Warm-up seconds of one run: an hour (submissions ask for at most 300).
pub const MAX_WARMUP_SECONDS: u32 = 3_600;

/// Tasks of one run: Linux's largest `NR_CPUS` (`CONFIG_MAXSMP`), the most
/// a percentage of online CPUs can resolve to.
pub const MAX_NR_TASK: u32 = 8_192;

/// Tasks a run may be asked to start (a submission's task count, `bench
/// -t`, a job the harness runs): four times will-it-scale's 1024, enough
/// for 100% on today's largest machines, small enough that a typo cannot
/// fork-bomb the machine. Below [`MAX_NR_TASK`], which bounds what a
/// stored run may carry rather than what is started.
pub const MAX_NR_TASK_ASKED: u32 = 4_096;

/// will-it-scale seconds (`samples`) of one run: one a measured second.
pub const MAX_SAMPLES: usize = MAX_SECONDS as usize;

/// Scalar metrics of one run. perf-profile keeps entries of at least
/// 0.05% of the samples, so even with call traces a run has a few
/// thousand.
pub const MAX_METRICS: usize = 10_000;

/// Per-second series of one run (will-it-scale ops, perf-stat intervals).
pub const MAX_SERIES: usize = 1_000;

/// Points of one series: an hour at 0.1 s intervals.
pub const MAX_SERIES_POINTS: usize = 36_000;

/// Largest magnitude of a count or rate: 2^64, the range of the u64
/// counters perf and will-it-scale read, so no total, rate or ratio of
/// them is larger (per-second rates and per-task means are smaller still).
/// Far below `f64::MAX`, so means, spans and axes of these values stay
/// finite.
pub const MAX_VALUE: f64 = 18_446_744_073_709_551_616.0;

/// Largest magnitude of a percentage (`perf-profile.*`, names ending in
/// `%`): a hundred times the whole. A share of samples is at most 100%;
/// ratios of multiplexed perf counters can pass 100% a little.
pub const MAX_PERCENT: f64 = 10_000.0;

/// Largest magnitude a value of metric `name` may have: [`MAX_PERCENT`]
/// for percentages, [`MAX_VALUE`] for everything else.
pub fn max_value(name: &str) -> f64 {
    if crate::metric::is_percentage(name) {
        MAX_PERCENT
    } else {
        MAX_VALUE
    }
}
