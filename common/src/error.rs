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
    /// A comparison submission breaks a rule; the message names the field
    /// by its JSON path and says what is allowed.
    #[error("{0}")]
    InvalidSubmission(String),
}
