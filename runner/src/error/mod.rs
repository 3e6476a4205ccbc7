//! The runner's one error type. Bad input from the user (unknown workload,
//! bad task count, unreadable file) exits with status 2; failures of the
//! machine or of a job exit with status 1. Why perf could not count has
//! its own type (`perf`), which `Error::Perf` carries.

pub mod perf;

pub use perf::{PerfError, ProcessProblem};

/// Everything that can go wrong in the runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user asked for something that cannot be done; exit status 2.
    #[error("{0}")]
    Usage(String),
    /// An external program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why exec failed.
        source: std::io::Error,
    },
    /// An external program exited unsuccessfully.
    #[error("`{command}` failed ({status}); last output:\n{tail}")]
    ProcessFailed {
        /// The command line.
        command: String,
        /// `exit status 2`, `killed by SIGKILL`, …
        status: String,
        /// The last lines it printed.
        tail: String,
    },
    /// An external program ran past its time limit; its process group was
    /// killed.
    #[error("`{command}` did not finish within {seconds} s; last output:\n{tail}")]
    ProcessTimedOut {
        /// The command line.
        command: String,
        /// The limit.
        seconds: f64,
        /// The last lines it printed.
        tail: String,
    },
    /// A benchmark run could not complete (a task failed or died).
    #[error("{0}")]
    Bench(String),
    /// perf could not count (missing, not allowed, or it failed).
    #[error(transparent)]
    Perf(#[from] PerfError),
    /// The kernel configuration did not come out as the fragments asked.
    #[error("kernel config: {0}")]
    Config(String),
    /// A JSON or TOML document could not be read or written.
    #[error("{what}: {message}")]
    Format {
        /// Which document.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// A kernel pipeline job failed, for a reason a report can name.
    #[error("job failed ({reason}): {detail}\n{log_tail}")]
    Job {
        /// `patch does not apply`, `kernel panic`, …
        reason: String,
        /// The specifics.
        detail: String,
        /// The end of the failing step's output.
        log_tail: String,
    },
    /// The patchperf server refused a request (4xx) or failed (5xx).
    #[error("server answered {status}: {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The server's `error` message.
        message: String,
    },
    /// The patchperf server could not be reached (connection refused,
    /// timeout, broken answer).
    #[error("cannot reach the server: {0}")]
    Unreachable(String),
    /// Ctrl-C: running programs were killed and the command stopped.
    #[error("interrupted")]
    Interrupted,
    /// A submitted comparison ended without a usable result (failed or
    /// cancelled); `submit --wait` exits with status 1.
    #[error("{0}")]
    ComparisonFailed(String),
    /// `submit --wait --fail-on-regression` saw a regression verdict.
    #[error("{0}")]
    Regression(String),
    /// A tool's output (perf stat, perf script, …) was not in the format we
    /// read; `line` is 1-based.
    #[error("{what}, line {line}: {message}")]
    Parse {
        /// Which output we were reading.
        what: &'static str,
        /// 1-based line number of the offending line (0 for the whole text).
        line: usize,
        /// What was wrong with it.
        message: String,
    },
    /// An I/O error with what we were doing at the time.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// Process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Interrupted => 130,
            Error::Regression(_) => 3,
            _ => 1,
        }
    }

    /// Whether trying the same server request again later may succeed: the
    /// server was unreachable or failed (5xx), rather than refusing (4xx).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Unreachable(_) => true,
            Error::Server { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The last output lines of a failed external program, if this error
    /// came from one.
    pub fn log_tail(&self) -> Option<&str> {
        match self {
            Error::ProcessFailed { tail, .. } | Error::ProcessTimedOut { tail, .. } => Some(tail),
            _ => None,
        }
    }

    /// A JSON (de)serialization error.
    pub fn json(e: serde_json::Error) -> Self {
        Error::Format {
            what: "JSON".to_string(),
            message: e.to_string(),
        }
    }

    /// Wraps an I/O error with a description of what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
