//! What every mail about a comparison says the same way, whoever sends it
//! (a tracked tree's change mail, a list's reply): the headline it leads
//! with, the absolute links it carries and the report text below. One
//! rule each, so the two mails never disagree about one comparison.

use patchperf_common::report::importance;
use patchperf_common::stats::Verdict;

use crate::Config;
use crate::domain::report::{ComparisonReport, verdict};

/// The most important report of a comparison when its headline metric
/// really changed, in words: what a mail's subject and first sentence say.
#[derive(Debug, Clone)]
pub struct Headline {
    /// Regression or improvement.
    pub verdict: Verdict,
    /// Its workload.
    pub workload: String,
    /// `-12.3% regression of will-it-scale.per_process_ops (fstat)`.
    pub words: String,
}

/// `report`'s headline: its most important report (as the text report and
/// the page order them), when that report's headline metric changed.
pub fn headline(report: &ComparisonReport) -> Option<Headline> {
    let g = importance::most_important(&report.groups, |g| &g.comparison)?;
    let m = g.comparison.headline_metric()?;
    if !matches!(m.verdict, Verdict::Regression | Verdict::Improvement) {
        return None;
    }
    Some(Headline {
        verdict: m.verdict,
        workload: g.comparison.header.workload.clone(),
        words: importance::subject_line(&g.comparison)?,
    })
}

/// The absolute link to `path` on this server; none without a public URL
/// (a mail's links must work from a mail client).
pub fn link(config: &Config, path: &str) -> Option<String> {
    config.public_url.as_ref().map(|_| config.link(path))
}

/// The report text a mail carries about `report`, its links absolute
/// below `report_url` ([`verdict::text_for_mail`]).
pub fn report_text(report: &ComparisonReport, report_url: &str) -> String {
    verdict::text_for_mail(report, report_url)
}
