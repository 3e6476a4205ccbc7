//! Report numbers as the pages show them: the same strings the text report
//! prints (0-day's formats), so HTML, text and JSON agree.

use chrono::{DateTime, Utc};
use patchperf_common::report::format::{change_column, mean_column, stddev_column};
use patchperf_common::report::{MetricComparison, Presence, SideStats};
use patchperf_common::stats::verdict::fmt_p;
use patchperf_common::stats::{ChangeUnit, Interval, Verdict, shown_stddev_percent};

/// A side's mean with its `± N%`, exactly as in the text table
/// (`3436082`, `0.03 ±  8%`), `-` without values, `n/s` when unsupported.
pub fn side_text(s: &SideStats) -> String {
    match (s.presence, s.mean) {
        (Presence::Measured, Some(mean)) => {
            let spread = stddev_column(shown_stddev_percent(&s.values));
            format!("{}{}", mean_column(mean).trim(), spread.trim_end())
        }
        (Presence::Unsupported, _) => "n/s".into(),
        _ => "-".into(),
    }
}

/// The `%change` column as the text table prints it: `+1.2%`, `-0.7`.
pub fn change_text(m: &MetricComparison) -> String {
    match m.change {
        Some(v) => change_column(v, m.unit == ChangeUnit::Points)
            .trim()
            .to_string(),
        None if m.base.mean.is_some() && m.patched.mean.is_some() => "n/a".into(),
        None => String::new(),
    }
}

/// `+0.81% … +1.62%`, `unbounded`, or empty.
pub fn interval_text(m: &MetricComparison) -> String {
    let unit = m.unit.suffix();
    match m.interval {
        Some(Interval::Bounded { low, high }) => format!("{low:+.2}{unit} … {high:+.2}{unit}"),
        Some(Interval::Unbounded) => "unbounded".into(),
        None => String::new(),
    }
}

/// A p- or q-value, or empty.
pub fn p_text(p: Option<f64>) -> String {
    p.map(fmt_p).unwrap_or_default()
}

/// CSS class of a verdict: `no-change`.
pub fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Improvement => "improvement",
        Verdict::Regression => "regression",
        Verdict::Changed => "changed",
        Verdict::NoChange => "no-change",
        Verdict::Undecided => "undecided",
    }
}

/// `2026-01-05 14:03 UTC`.
pub fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// `09:41:07`: a log line's time; the day is in the page's first line.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

/// `64G` (0-day's way of writing memory).
pub fn memory(bytes: i64) -> String {
    let gib = bytes as f64 / f64::from(1u32 << 30);
    if gib >= 1.0 {
        format!("{}G", gib.round())
    } else {
        format!("{}M", (bytes >> 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_print_like_the_text_table() {
        let side = |values: Vec<f64>| SideStats {
            presence: Presence::Measured,
            mean: patchperf_common::stats::mean(&values),
            stddev: None,
            stddev_percent: None,
            values,
        };
        assert_eq!(side_text(&side(vec![0.0, 0.0, 0.06])), "0.02 ±141%");
        assert_eq!(side_text(&side(vec![3_436_082.5; 3])), "3436082");
        let absent = SideStats {
            presence: Presence::Absent,
            values: vec![],
            mean: None,
            stddev: None,
            stddev_percent: None,
        };
        assert_eq!(side_text(&absent), "-");
    }

    #[test]
    fn memory_in_gigabytes() {
        assert_eq!(memory(64 << 30), "64G");
        assert_eq!(memory(512 << 20), "512M");
    }
}
