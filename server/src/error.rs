//! The server's one error type, in the words of what went wrong. The HTTP
//! layer maps each variant to a status (`http::error`); the domain and the
//! database layer never think in statuses.
//!
//! Which variant to use:
//! - [`Error::Unauthorized`]: no usable token (missing, malformed, unknown
//!   or revoked). Say which and how to get one.
//! - [`Error::Forbidden`]: a valid caller that may not do this (wrong token
//!   kind, a machine registered under another token).
//! - [`Error::Malformed`]: the request cannot be read: malformed JSON, a body
//!   of the wrong shape, a bad path or query parameter. Usually produced by
//!   the extractors in `http::extract`.
//! - [`Error::NotFound`]: the thing named does not exist.
//! - [`Error::WrongState`]: the request is fine but the thing is in the wrong
//!   state for it: the caller does not hold the job's lease, the job is
//!   already finished, the comparison is already final.
//! - [`Error::TooLarge`]: the input is over a configured limit (a body, a
//!   repository's output).
//! - [`Error::Invalid`]: the input was read but its content is invalid:
//!   unknown workload, fewer than 3 runs, an mbox without a patch, a
//!   non-finite metric. Name the field and the allowed values.
//! - [`Error::NotMeasured`]: a series that names no workloads touches only
//!   files no workload exercises (the workload map's word); the message
//!   names them.
//! - [`Error::Unavailable`]: the request is fine but answering it would take
//!   longer than the server allows or needs what is busy now (a report that
//!   takes too long, every git slot taken). Say what, and when to retry.
//! - [`Error::Setup`]: starting up or a command-line command failed (no
//!   Postgres binaries, unusable data directory); never from a request.
//! - [`Error::Database`] / [`Error::Internal`]: our fault. Logged with all
//!   detail; the caller gets a generic message, never SQL or paths.
//!
//! Every message of a caller's mistake is written for the caller to act on:
//! it says what was wrong and, where it can, what would be right.

/// Everything the server's work can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No valid token.
    #[error("{0}")]
    Unauthorized(String),
    /// A valid caller that may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The request could not be read.
    #[error("{0}")]
    Malformed(String),
    /// No such thing.
    #[error("{0}")]
    NotFound(String),
    /// Wrong state for this request.
    #[error("{0}")]
    WrongState(String),
    /// Input over a limit.
    #[error("{0}")]
    TooLarge(String),
    /// Readable but invalid content.
    #[error("{0}")]
    Invalid(String),
    /// Nothing to measure a series on: no workload exercises the files it
    /// touches (`not measured: no workload exercises fs/xyz.c`).
    #[error("{0}; name the workloads to measure it on anyway")]
    NotMeasured(String),
    /// Answering would take longer than allowed, or what it needs is busy;
    /// `retry_after` says when to try again, when known.
    #[error("{message}")]
    Unavailable {
        /// What took too long or is busy.
        message: String,
        /// Seconds after which a retry may succeed.
        retry_after: Option<u64>,
    },
    /// Too many requests of this kind are running (for this token, or in
    /// all); try again after `retry_after` seconds.
    #[error("{message}")]
    Busy {
        /// What is running and the bound.
        message: String,
        /// Seconds after which a retry may be admitted.
        retry_after: u64,
    },
    /// A database error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Anything else that is our fault.
    #[error("internal error: {0}")]
    Internal(String),
    /// Startup or command-line failure, with what to do about it.
    #[error("{0}")]
    Setup(String),
}

impl Error {
    /// Answering would take longer than allowed; no retry hint.
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::Unavailable {
            message: message.into(),
            retry_after: None,
        }
    }
}

/// Result type of the server's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
