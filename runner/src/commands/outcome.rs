//! What `submit`, `wait` and `status` tell: lines for a person, or with
//! `--json` one JSON document on standard output for CI (id, status,
//! verdict, report URL, and how and why the command ended), the lines then
//! going to standard error so the document is all a pipeline reads.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use patchperf_common::api::{ComparisonView, VerdictSummary};

use crate::Error;
use crate::error::exit;

static LINES_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Sends the lines for a person to standard error from now on (`--json`).
pub fn json_mode() {
    LINES_TO_STDERR.store(true, Ordering::SeqCst);
}

/// Whether the lines for a person go to standard error.
pub fn lines_to_stderr() -> bool {
    LINES_TO_STDERR.load(Ordering::SeqCst)
}

/// A line for a person: standard output, or standard error with `--json`.
macro_rules! say {
    ($($arg:tt)*) => {
        if $crate::commands::outcome::lines_to_stderr() {
            eprintln!($($arg)*)
        } else {
            println!($($arg)*)
        }
    };
}
pub(crate) use say;

/// What a command learnt of its comparison on the way, for the document.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The comparison, once submitted (or named).
    pub id: Option<i64>,
    /// Its report, as a person opens it.
    pub report_url: Option<String>,
    /// Its view when the wait ended.
    pub end: Option<ComparisonView<VerdictSummary>>,
}

/// How the command ended, as CI branches on it.
fn exit_name(code: i32) -> &'static str {
    match code {
        0 => "done",
        exit::FAILED => "failed",
        exit::REFUSED => "refused",
        exit::REGRESSION => "regression",
        exit::GAVE_UP => "gave-up",
        exit::TEMPFAIL => "unreachable",
        exit::INTERRUPTED => "interrupted",
        _ => "error",
    }
}

impl Outcome {
    /// The document for `result`, printed on standard output.
    pub fn print(&self, result: &Result<(), Error>) {
        let code = result.as_ref().map_or_else(Error::exit_code, |()| 0);
        let doc = json!({
            "id": self.id,
            "status": self.end.as_ref().map(|e| e.status.to_string()),
            "verdict": self.end.as_ref().map(|e| e.verdict.overall.to_string()),
            "headlines": self.end.as_ref().map(|e| e.verdict.headlines.clone()),
            "report_url": self.report_url,
            "exit": exit_name(code),
            "exit_code": code,
            "message": result.as_ref().err().map(ToString::to_string),
        });
        println!("{doc}");
    }
}
