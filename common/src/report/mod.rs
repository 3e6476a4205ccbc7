//! The comparison report: the model (`model`), how it is built from runs
//! (`build`), which runs one report compares (`group`), 0-day's row order (`order`) and number formatting (`format`),
//! which of a comparison's reports comes first (`importance`), why its
//! headline moved (`explain`), the plain-text form an email to the patch
//! author carries (`text`), and the report with its runs as the server
//! stores it (`stored`).

pub mod build;
pub mod culprit;
pub mod explain;
pub mod format;
pub mod group;
pub mod importance;
pub mod model;
pub mod order;
pub mod stored;
pub mod summary;
#[cfg(test)]
mod test_runs;
pub mod text;

pub use build::{build_comparison, header_from_runs};
pub use group::{ReportKey, group_by_report};
pub use model::{
    Comparison, KernelLabel, MetricComparison, PipelineFact, Presence, ReportHeader, SideStats,
};
