//! The shared crate's one error type: what can be wrong with the input of a
//! pure computation (there is no I/O here to fail).

/// Everything the shared crate can reject.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Runs of one comparison must share workload, mode and nr_task; a
    /// report compares like with like.
    #[error(
        "runs of different parameters cannot be compared in one report: \
         {expected} and {found}"
    )]
    MixedRuns {
        /// The parameters of the first run, `dup1/process/2`.
        expected: String,
        /// The parameters of the first run that differs.
        found: String,
    },
    /// A submitted mbox holds nothing but whitespace.
    #[error("mbox is empty")]
    MboxEmpty,
    /// No message of a submitted mbox carries a diff.
    #[error("mbox contains no patch (no message with a diff in it)")]
    MboxWithoutPatch,
    /// A message's headers cannot be read as mail headers.
    #[error(
        "message {message} of the mbox: bad headers ({detail}); \
         send the series as `git format-patch --stdout` writes it"
    )]
    MboxHeaders {
        /// Which message, counting from 1.
        message: usize,
        /// What the header parser said.
        detail: String,
    },
    /// A message carries a diff but not the headers that name the patch.
    #[error(
        "message {message} of the mbox has a diff but no Subject or From header \
         (a plain `git diff` or `diff -u` names no patch); send the series as \
         `git format-patch --stdout` writes it"
    )]
    MboxDiffWithoutHeaders {
        /// Which message, counting from 1.
        message: usize,
    },
    /// A mail message is larger than the reader takes.
    #[error("message of {bytes} bytes is larger than {max} bytes")]
    MailTooLarge {
        /// The message's size.
        bytes: usize,
        /// The most read.
        max: usize,
    },
    /// A mail message cannot be read (its headers, or a MIME tree with too
    /// many parts or too deep).
    #[error("message cannot be read: {0}")]
    MailStructure(String),
    /// An mbox holds more messages than are read from one.
    #[error("mbox holds more than {max} messages")]
    MailTooMany {
        /// The most read.
        max: usize,
    },
    /// A comparison submission breaks a rule; the message names the field
    /// by its JSON path and says what is allowed.
    #[error("{0}")]
    InvalidSubmission(String),
    /// A run breaks a rule ([`crate::run::RunResult::validate`]); the
    /// message names the field or metric and says what is allowed.
    #[error("{0}")]
    InvalidRun(String),
    /// A workload map's text breaks its format.
    #[error("workload map line {line}: {message}")]
    WorkloadMap {
        /// The line, counting from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}
