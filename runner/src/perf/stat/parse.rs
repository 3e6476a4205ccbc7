//! Reads what `perf stat -x,` prints (perf 6.1's CSV form) into counter
//! readings, without deciding what they mean: that is `metrics`' job.
//!
//! perf documents the CSV fields (perf-stat(1), "CSV FORMAT") as: optional
//! time stamp (with `-I`), optional aggregation id (not used here: we count
//! system-wide with the default global aggregation), counter value, unit,
//! event name, counter run time, percentage of measurement time the counter
//! was running, optional variance (with `-r`, not used), optional metric
//! value and metric unit. For example, one interval of `perf stat -a -I 1000`
//! on a machine without a usable PMU:
//!
//! ```text
//!      1.001090230,<not supported>,,cycles,0,100.00,,
//!      1.001090230,2002.57,msec,task-clock,2002571171,100.00,2.003,CPUs utilized
//! ```
//!
//! How multiplexing shows up: when more events are asked for than the PMU has
//! counters, the kernel rotates them and reports for each counter the time it
//! was enabled and the time it was really running. perf (6.1,
//! `perf_counts_values__scale`) then prints the *scaled* estimate
//! `raw × enabled ÷ running` as the counter value, the running time in
//! nanoseconds as the run-time field, and `100 × running ÷ enabled` (computed
//! in integers, so it reads `49.00`, never `49.50`) as the percentage. A
//! counter that was enabled but never ran (running = 0) is printed as
//! `<not counted>`; one the kernel refused to open as `<not supported>`.
//! A counter value here is therefore already perf's estimate and is used as
//! is; the percentage tells how much of it was measured rather than
//! extrapolated.
//!
//! Lines whose event field is empty are extra derived metrics perf prints on a
//! line of their own ("Additional metrics may be printed with all earlier
//! fields being empty"); they are skipped, as are blank lines and the
//! `# started on …` comment perf writes at the top of its `-o` file.

use crate::Error;

const WHAT: &str = "perf stat output";

/// One counter as perf printed it for one interval (or for the whole run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// perf counted the event. `value` is perf's (possibly scaled) count in
    /// the event's unit; `running_percent` is how much of the time the counter
    /// was really on the PMU (100 unless multiplexed).
    Counted {
        /// The count, already scaled by perf for multiplexing.
        value: f64,
        /// `100 × running ÷ enabled`, as perf printed it.
        running_percent: f64,
    },
    /// `<not counted>`: the counter was enabled but never ran.
    NotCounted,
    /// `<not supported>`: the kernel or the PMU cannot count this event.
    NotSupported,
}

/// One `-I` interval: every counter perf printed with the same time stamp.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// perf's time stamp: seconds since counting began, at the interval's end.
    pub end_seconds: f64,
    /// The counters in the order perf printed them.
    pub readings: Vec<(String, Reading)>,
}

impl Interval {
    /// The reading of one event in this interval, if perf printed it.
    pub fn reading(&self, event: &str) -> Option<Reading> {
        self.readings
            .iter()
            .find(|(name, _)| name == event)
            .map(|(_, reading)| *reading)
    }
}

/// Parses `perf stat -x, -I <ms>` output into its intervals, in time order.
///
/// Fails on anything that is not perf's CSV form, on time stamps that go
/// backwards and on an event printed twice in one interval; never panics.
pub fn parse_intervals(text: &str) -> Result<Vec<Interval>, Error> {
    let mut intervals: Vec<Interval> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let Some(fields) = counter_fields(line) else {
            continue;
        };
        if fields.len() < 7 {
            return Err(error(line_no, "expected a time stamp and six more fields"));
        }
        let stamp = fields[0].trim();
        let end_seconds = parse_number(stamp)
            .ok_or_else(|| error(line_no, format!("`{stamp}` is not a time stamp in seconds")))?;
        let Some((event, reading)) = parse_counter(&fields[1..], line_no)? else {
            continue;
        };
        match intervals.last_mut() {
            Some(last) if last.end_seconds == end_seconds => {
                if last.reading(&event).is_some() {
                    return Err(error(
                        line_no,
                        format!("event `{event}` printed twice at {stamp} s"),
                    ));
                }
                last.readings.push((event, reading));
            }
            Some(last) if end_seconds < last.end_seconds => {
                return Err(error(
                    line_no,
                    format!(
                        "time stamp {stamp} s is before the previous one ({} s)",
                        last.end_seconds
                    ),
                ));
            }
            _ => intervals.push(Interval {
                end_seconds,
                readings: vec![(event, reading)],
            }),
        }
    }
    Ok(intervals)
}

/// Parses `perf stat -x,` output without `-I` (one reading per event for
/// the whole run), as the PMU probe prints it.
pub fn parse_totals(text: &str) -> Result<Vec<(String, Reading)>, Error> {
    let mut readings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let Some(fields) = counter_fields(line) else {
            continue;
        };
        if fields.len() < 6 {
            return Err(error(line_no, "expected at least six fields"));
        }
        if let Some(counter) = parse_counter(&fields, line_no)? {
            readings.push(counter);
        }
    }
    Ok(readings)
}

/// The CSV fields of a line that may carry a counter; `None` for blank lines
/// and comments.
fn counter_fields(line: &str) -> Option<Vec<&str>> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    Some(line.split(',').collect())
}

/// Reads `value,unit,event,run,percent[,…]`; `None` for a metric-only line.
fn parse_counter(fields: &[&str], line_no: usize) -> Result<Option<(String, Reading)>, Error> {
    let [value, _unit, event, run, percent, ..] = fields else {
        return Err(error(
            line_no,
            "expected value, unit, event, run time and percentage",
        ));
    };
    let event = event.trim();
    if event.is_empty() {
        if value.trim().is_empty() {
            return Ok(None);
        }
        return Err(error(line_no, "a counter value without an event name"));
    }
    let reading = match value.trim() {
        "<not supported>" => Reading::NotSupported,
        "<not counted>" => Reading::NotCounted,
        value => {
            let value = parse_number(value).ok_or_else(|| {
                error(
                    line_no,
                    format!("`{value}` is not a counter value for `{event}`"),
                )
            })?;
            let running_percent = parse_number(percent.trim())
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| {
                    error(
                        line_no,
                        format!(
                            "`{}` is not a running percentage for `{event}`",
                            percent.trim()
                        ),
                    )
                })?;
            Reading::Counted {
                value,
                running_percent,
            }
        }
    };
    if run.trim().parse::<u64>().is_err() {
        return Err(error(
            line_no,
            format!("`{}` is not a run time in ns for `{event}`", run.trim()),
        ));
    }
    Ok(Some((event.to_string(), reading)))
}

/// A finite, non-negative decimal number as perf prints counts.
fn parse_number(text: &str) -> Option<f64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn error(line: usize, message: impl Into<String>) -> Error {
    Error::Parse {
        what: WHAT,
        line,
        message: message.into(),
    }
}
