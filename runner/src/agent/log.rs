//! The agent's log lines on standard error, each led by the UTC time it was
//! written (`2026-12-02T17:40:01Z patchperf-runner agent: …`), so that a log
//! file without journald (the demo's, a lab's) says when a build started
//! and how long a boot took.

use chrono::{SecondsFormat, Utc};

/// Writes one line of the agent's log, as `format!` takes its arguments.
macro_rules! agent_log {
    ($($arg:tt)*) => {
        $crate::agent::log::line(format_args!($($arg)*))
    };
}
pub(crate) use agent_log;

/// Writes `what` as one line of the agent's log.
pub fn line(what: std::fmt::Arguments<'_>) {
    eprintln!("{}", stamped(Utc::now(), what));
}

fn stamped(at: chrono::DateTime<Utc>, what: std::fmt::Arguments<'_>) -> String {
    format!(
        "{} patchperf-runner agent: {what}",
        at.to_rfc3339_opts(SecondsFormat::Secs, true)
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_line_starts_with_its_utc_time() {
        let at = Utc.with_ymd_and_hms(2026, 12, 2, 17, 40, 1).unwrap();
        assert_eq!(
            stamped(at, format_args!("job {} done", 7)),
            "2026-12-02T17:40:01Z patchperf-runner agent: job 7 done"
        );
    }
}
