//! Why a perf collector could not count: [`PerfError`]. The harness turns
//! it into a run's warning (the run goes on without perf metrics), so each
//! message says what failed in words a user can act on, with the end of
//! perf's own stderr where perf said something.
//!
//! It sits beside the runner's [`Error`](super::Error), not in `perf`, as
//! `Error::Perf` carries it: the error types are the layer every other
//! module (perf included) builds on.

use std::path::PathBuf;

/// Everything that can go wrong around perf.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// perf cannot be used on this machine: missing, no perf events in the
    /// kernel, or not allowed to count system-wide.
    #[error("{0}")]
    Unavailable(String),
    /// The options ask for something perf cannot do (an unknown collector,
    /// an event name with a comma, an interval under perf's minimum).
    #[error("{0}")]
    Options(String),
    /// A collector was stopped or read before it was started or stopped.
    #[error("{what} was not {step}")]
    NotRunning {
        /// `perf stat`, `perf record`.
        what: &'static str,
        /// `started`, `stopped`.
        step: &'static str,
    },
    /// A file or directory perf's work needs could not be made or read.
    #[error("{what}: {source}")]
    Io {
        /// `cannot create /tmp/…/stat.stderr`, …
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A control fifo could not be made.
    #[error("cannot make fifo {}: {source}", path.display())]
    MakeFifo {
        /// The fifo.
        path: PathBuf,
        /// Why mkfifo(3) failed.
        source: nix::Error,
    },
    /// A control fifo could not be opened, written or read.
    #[error("{what}: control fifo {}: {source}", path.display())]
    ControlFifo {
        /// The perf command (`perf stat`).
        what: String,
        /// The fifo.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// perf could not be started.
    #[error("cannot start {what}: {source}")]
    Spawn {
        /// The perf command.
        what: String,
        /// Why exec failed.
        source: std::io::Error,
    },
    /// perf could not be told to stop.
    #[error("cannot send SIGINT to {what}: {source}")]
    Signal {
        /// The perf command.
        what: String,
        /// Why kill(2) failed.
        source: nix::Error,
    },
    /// A perf process ended badly, or not in time.
    #[error("{what} {problem}{stderr}")]
    Process {
        /// The perf command.
        what: String,
        /// What went wrong.
        problem: ProcessProblem,
        /// `: <its last stderr lines>`, or empty when it printed nothing.
        stderr: String,
    },
    /// perf's output could not be read back (a [`crate::Error::Parse`]),
    /// with the end of its stderr where that explains more.
    #[error("{source}{stderr}")]
    Output {
        /// The parse error. Boxed as any error so `PerfError` does not
        /// contain the `Error` that contains it.
        source: Box<dyn std::error::Error + Send + Sync>,
        /// `: <perf's last stderr lines>`, or empty.
        stderr: String,
    },
    /// None of a session's collectors started; why, per collector.
    #[error("{}", .0.join("; "))]
    NoneStarted(Vec<String>),
}

/// How a perf process went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessProblem {
    /// It exited before it counted.
    #[error("failed to start ({0})")]
    FailedToStart(String),
    /// It did not answer on its control fifo in time.
    #[error("was not counting after {0} s")]
    NotCounting(u64),
    /// It exited while the run was still measuring.
    #[error("stopped before the measured seconds ended ({0})")]
    StoppedEarly(String),
    /// It did not exit in time after SIGINT.
    #[error("did not finish within {0} s of SIGINT")]
    IgnoredSigint(u64),
    /// It ran past its limit and was killed.
    #[error("did not finish within {0} s")]
    TimedOut(u64),
    /// It exited unsuccessfully.
    #[error("failed ({0})")]
    Failed(String),
}

impl PerfError {
    /// An I/O failure described as `what`.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        PerfError::Io {
            what: what.into(),
            source,
        }
    }

    /// perf's output could not be parsed; `stderr` as
    /// [`crate::perf::exec::tail`] gives it.
    pub(crate) fn output(
        source: impl std::error::Error + Send + Sync + 'static,
        stderr: String,
    ) -> Self {
        PerfError::Output {
            source: Box::new(source),
            stderr,
        }
    }
}
