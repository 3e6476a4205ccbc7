//! What only pages show: a verdict's CSS class, times and memory sizes as
//! the pages print them. Report numbers come from
//! `patchperf_common::report::format`, shared with the text report.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::OverallVerdict;
use patchperf_common::protocol::FailureReason;
use patchperf_common::stats::Verdict;

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

/// CSS class of an overall verdict: `no-change`.
pub fn overall_class(v: OverallVerdict) -> String {
    v.as_str().replace(' ', "-")
}

/// A job's failure in words, with its detail: `build failed: make: …`.
pub fn failure_text(reason: FailureReason, detail: Option<&str>) -> String {
    match detail {
        Some(d) if !d.is_empty() => format!("{}: {d}", reason.as_str()),
        _ => reason.as_str().to_string(),
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

/// A machine's memory (see [`patchperf_common::report::format::memory`]).
pub fn memory(bytes: i64) -> String {
    patchperf_common::report::format::memory(u64::try_from(bytes).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_in_gigabytes() {
        assert_eq!(memory(64 << 30), "64G");
        assert_eq!(memory(512 << 20), "512M");
    }
}
