//! A comparison's report as the server stores and serves it: the
//! statistics of each (workload, mode, nr_task) with the runs they were
//! computed from. The server builds it from stored runs, keeps it encoded
//! in the database and in memory, and renders every view from it.

use serde::{Deserialize, Serialize};

use super::Comparison;
use crate::run::{RunResult, Side};

/// A stored run with the values a report uses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRun {
    /// Run id.
    pub id: i64,
    /// Job that uploaded it (its log is that job's).
    pub job_id: i64,
    /// Comparison-wide boot position.
    pub boot_seq: i32,
    /// Base or patched.
    pub side: Side,
    /// The run as the statistics see it (metrics, unsupported, kernel).
    pub result: RunResult,
}

/// The report of one (workload, mode, nr_task) of a comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupReport {
    /// The statistics and verdicts.
    pub comparison: Comparison,
    /// The runs, in boot order.
    pub runs: Vec<StoredRun>,
}

/// Everything the report of a comparison shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonReport {
    /// One report per (workload, mode, nr_task) with runs, in the order of
    /// the requested workloads, then nr_task.
    pub groups: Vec<GroupReport>,
}

impl ComparisonReport {
    /// Its reports the worst first ([`crate::stats::severity`]): the order
    /// of every page that shows them one after another.
    pub fn worst_first(&self) -> Vec<&GroupReport> {
        let mut groups: Vec<&GroupReport> = self.groups.iter().collect();
        crate::stats::sort_worst_first(&mut groups, |g| g.comparison.outcome());
        groups
    }
}
