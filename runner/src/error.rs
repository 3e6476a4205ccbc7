//! The runner's one error type. Bad input from the user (unknown workload,
//! bad task count, unreadable file) exits with status 2; failures of the
//! machine or of a job exit with status 1.

/// Everything that can go wrong in the runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user asked for something that cannot be done; exit status 2.
    #[error("{0}")]
    Usage(String),
    /// A subcommand that this build does not provide yet.
    #[error("`{0}` is not available in this build yet")]
    NotAvailable(&'static str),
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
            _ => 1,
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
