//! The CI API: what CI sends to `POST /api/v1/comparisons` and what the
//! server answers about comparisons. The server serves these types and
//! `runner submit` reads them, so the API has one definition, as the runner
//! protocol has in [`crate::protocol`].
//!
//! With the `openapi` feature every type also describes itself as an
//! OpenAPI schema, from which the server builds its API document.

/// Declares `$checked`, a `$request` that `$check` found sound (and may
/// have completed): read it through `Deref`, build it with `try_from`. Every
/// submission has this one shape, so none can be acted on unchecked; a
/// macro because each needs its own type, and a generic wrapper's
/// `TryFrom<T>` would clash with the standard library's blanket one.
macro_rules! checked {
    ($(#[$doc:meta])* $checked:ident($request:ident), $check:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $checked($request);

        impl std::ops::Deref for $checked {
            type Target = $request;

            fn deref(&self) -> &$request {
                &self.0
            }
        }

        impl TryFrom<$request> for $checked {
            type Error = crate::Error;

            fn try_from(req: $request) -> Result<Self, crate::Error> {
                $check(req).map($checked)
            }
        }
    };
}

pub mod bisection;
pub mod change;
pub mod git;
pub mod list;
pub mod setup;
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
pub use setup::{AskedParams, MAX_RUNS, MIN_RUNS, Setup};
pub use submission::{ComparisonCreateRequest, ComparisonSubmission};
pub use tree::{
    HistoryPoint, HistoryQuery, HistoryView, PushResponse, TreeCreateRequest, TreeCreated,
    TreeSubmission, TreeView,
};
pub use view::{
    BootView, CancelResponse, ComparisonCreated, ComparisonListQuery, ComparisonView, FailureView,
    JobView, PatchMessage, PatchesView, RunCounts, StepHeadline, StepOf, StepView, VerdictSummary,
};
