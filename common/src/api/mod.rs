//! The CI API: what CI sends to `POST /api/v1/comparisons` and what the
//! server answers about comparisons. The server serves these types and
//! `runner submit` reads them, so the API has one definition, as the runner
//! protocol has in [`crate::protocol`].
//!
//! With the `openapi` feature every type also describes itself as an
//! OpenAPI schema, from which the server builds its API document.

pub mod bisection;
pub mod change;
pub mod git;
pub mod list;
pub mod submission;
pub mod tree;
pub mod view;

#[cfg(feature = "openapi")]
mod schema;

pub use bisection::{
    BisectCommit, BisectionCreateRequest, BisectionCreated, BisectionOutcome, BisectionStatus,
    BisectionSubmission, BisectionView, OutcomeKind, ProbeView,
};
pub use change::{ChangeState, ChangeVerdict};
pub use list::{
    ListCreateRequest, ListSubmission, ListView, MessagesTaken, SeriesListQuery, SeriesState,
    SeriesView, WorkloadRule,
};
pub use submission::{
    AskedParams, ComparisonCreateRequest, ComparisonSubmission, MAX_RUNS, MIN_RUNS,
};
pub use tree::{
    HistoryPoint, HistoryQuery, HistoryView, PushResponse, TreeCreateRequest, TreeCreated,
    TreeSubmission, TreeView,
};
pub use view::{
    BootView, CancelResponse, ComparisonCreated, ComparisonListQuery, ComparisonView, FailureView,
    JobView, PatchMessage, PatchesView, RunCounts, StepHeadline, StepOf, StepView, VerdictSummary,
};
