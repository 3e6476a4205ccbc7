//! How a job fails: a [`JobFailure`] whose reason a report can name and
//! whose detail names the step, mapped from the runner's [`Error`] by
//! [`failure`].

use patchperf_common::protocol::FailureReason;

use crate::Error;

/// Why a job could not complete, as the agent reports it to the server.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFailure {
    /// The class of failure the report names (`patch does not apply`, …).
    pub reason: FailureReason,
    /// The specifics: the failing hunk, the panic text, the missing tool.
    pub detail: String,
    /// The last lines of the output of the step that failed.
    pub log_tail: String,
}

impl JobFailure {
    /// A failure with no log to show.
    pub fn new(reason: FailureReason, detail: impl Into<String>) -> Self {
        JobFailure {
            reason,
            detail: detail.into(),
            log_tail: String::new(),
        }
    }
}

/// A failure of `step` with `reason`, unless the error says better
/// (a time limit → timeout, Ctrl-C → cancelled).
pub fn failure(reason: FailureReason, step: &str, e: Error) -> JobFailure {
    let log_tail = e.log_tail().unwrap_or_default().to_string();
    let reason = match e {
        Error::ProcessTimedOut { .. } => FailureReason::Timeout,
        Error::Interrupted => FailureReason::Cancelled,
        _ => reason,
    };
    let detail = match &e {
        Error::ProcessFailed {
            command, status, ..
        } => format!("{step}: `{command}` failed ({status})"),
        Error::ProcessTimedOut {
            command, seconds, ..
        } => {
            format!("{step}: `{command}` did not finish within {seconds} s")
        }
        other => format!("{step}: {other}"),
    };
    JobFailure {
        reason,
        detail,
        log_tail,
    }
}
