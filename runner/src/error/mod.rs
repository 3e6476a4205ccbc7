//! The runner's one error type, and the exit status each error gives
//! ([`exit`]): what CI scripts act on. Why perf could not count has its
//! own type (`perf`), which `Error::Perf` carries.

pub mod perf;

pub use perf::{PerfError, ProcessProblem};

/// Exit statuses, one per thing a CI script does differently.
pub mod exit {
    /// A comparison failed (a patch does not apply, a kernel does not
    /// build or boot, cancelled), or this machine failed: look at the log.
    pub const FAILED: i32 = 1;
    /// Refused: a bad command line, or a request the server answered 4xx
    /// (bad arguments, a bad token). Trying again changes nothing.
    pub const REFUSED: i32 = 2;
    /// `--fail-on-regression` and the verdict is a regression.
    pub const REGRESSION: i32 = 3;
    /// `--wait` gave up: `--timeout` passed, or no runner took the work for
    /// `--stall-timeout`.
    pub const GAVE_UP: i32 = 4;
    /// The server could not be reached or answered 5xx: try again later
    /// (sysexits' EX_TEMPFAIL).
    pub const TEMPFAIL: i32 = 75;
    /// Ctrl-C.
    pub const INTERRUPTED: i32 = 130;
}

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
    /// The server speaks no protocol version this runner does; the message
    /// names both and what to upgrade. Exit status 2: waiting changes
    /// nothing.
    #[error("{0}")]
    Incompatible(String),
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
    /// `submit --wait` stopped waiting before the comparison ended.
    #[error("{0}")]
    GaveUp(String),
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
            Error::Usage(_) | Error::Incompatible(_) => exit::REFUSED,
            Error::Server { status, .. } if (400..500).contains(status) => exit::REFUSED,
            Error::Unreachable(_) => exit::TEMPFAIL,
            Error::Server { status, .. } if *status >= 500 => exit::TEMPFAIL,
            Error::Interrupted => exit::INTERRUPTED,
            Error::Regression(_) => exit::REGRESSION,
            Error::GaveUp(_) => exit::GAVE_UP,
            _ => exit::FAILED,
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
