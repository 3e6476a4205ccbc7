//! Why a failed comparison failed, as its page, its `report.txt` and a
//! list's note say it first: the job that tells why, picked and put into
//! words by [`patchperf_common::naming`]'s rule (the listing's query picks
//! the same job for the dashboard and the machine page), from the
//! comparison's own jobs or, for a per-patch comparison, its first failed
//! step's.

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::naming::{self, FailedStep, FailureWords};

use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::{Error, db};

/// A failed comparison's failure, said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The line and the detail behind it ([`naming::failure_words`]).
    pub words: FailureWords,
    /// The job whose words they are, whose log has the rest.
    pub job_id: i64,
}

/// Why comparison `c` failed; `None` unless it did (a cancelled one was
/// cancelled, and says so by its status).
pub async fn of(ctx: &Context, c: &ComparisonRow) -> Result<Option<Failure>, Error> {
    if c.status != ComparisonStatus::Failed {
        return Ok(None);
    }
    let steps = db::comparisons::steps(&ctx.db, c.id).await?;
    // A per-patch comparison fails with its first step that failed: its
    // own jobs only say `not run: patch 2/3 … does not apply`.
    let (comparison_id, step) = match steps.iter().find(|s| s.status == ComparisonStatus::Failed) {
        Some(s) => (
            s.id,
            Some(FailedStep {
                step: s.step,
                of: steps.len(),
                commits: c.git_range.is_some(),
            }),
        ),
        None => (c.id, None),
    };
    let jobs = db::jobs::for_comparison(&ctx.db, comparison_id).await?;
    let failed: Vec<_> = jobs
        .iter()
        .filter_map(|j| Some((j, j.failure_reason?)))
        .collect();
    let telling = naming::telling_failure(
        failed
            .iter()
            .map(|(j, reason)| (*reason, j.failure_detail.as_deref().unwrap_or_default())),
    );
    Ok(telling.map(|i| {
        let (job, reason) = failed[i];
        Failure {
            words: naming::failure_words(reason, job.failure_detail.as_deref(), step),
            job_id: job.id,
        }
    }))
}

impl Failure {
    /// The failure as `report.txt` opens with it: the line as a sentence,
    /// the detail behind it, and the failed job's log beside the report at
    /// `report_url` (`…/comparisons/{id}`); `measured` when runs were
    /// stored before it failed, whose reports follow with their own
    /// `report:` lines.
    pub fn text(&self, measured: bool, report_url: &str) -> String {
        let verb = if measured { "finish" } else { "measure" };
        let mut text = format!(
            "patchperf could not {verb} this comparison: {}.\n",
            self.words.line
        );
        if let Some(evidence) = &self.words.evidence {
            text.push('\n');
            text.push_str(evidence);
            text.push('\n');
        }
        // The same server's origin (or none, for a relative link).
        let origin = report_url
            .rsplit_once("/comparisons/")
            .map_or("", |(origin, _)| origin);
        text.push_str(&format!("\njob log: {origin}/jobs/{}/log\n", self.job_id));
        if !measured {
            text.push_str(&format!("report: {report_url}\n"));
        }
        text
    }
}
