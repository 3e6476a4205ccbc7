//! The `verdict` CI reads from `GET /api/v1/comparisons/{id}` and the text
//! report of `GET /api/v1/comparisons/{id}/report.txt`, both from the same
//! built report.

use std::sync::Arc;

use patchperf_common::comparison::OverallVerdict;
use patchperf_common::report::Comparison;
use patchperf_common::report::importance::by_importance;
use patchperf_common::report::text::{TextOptions, render, summary_line};
use patchperf_common::stats::Verdict;
use serde::Serialize;

use super::ComparisonReport;
use crate::Error;
use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;

/// The statistical verdict of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    /// `regression` when any report's headline metric regressed,
    /// `improvement` when one improved and none regressed, `no change` when
    /// every headline shows no change, `no results` before any run is
    /// stored, `undecided` otherwise.
    pub overall: OverallVerdict,
    /// The headline sentence of each report ("patchperf noticed a 4.1%
    /// improvement of will-it-scale.per_process_ops on:"), the most
    /// important first ([`patchperf_common::report::importance`]).
    pub headlines: Vec<String>,
    /// The plain-text report.
    pub text_url: String,
    /// One report per (workload, mode, nr_task): per metric the means,
    /// %stddev, %change, interval, Welch and Mann–Whitney tests, q-value,
    /// 0-day's rule and our verdict with its reason.
    pub reports: Vec<Comparison>,
}

/// The verdict of a built report.
pub fn verdict_view(report: &ComparisonReport, text_url: String) -> VerdictView {
    let headlines: Vec<Verdict> = report
        .groups
        .iter()
        .filter_map(|g| g.comparison.headline_metric().map(|m| m.verdict))
        .collect();
    let overall = if report.groups.is_empty() {
        OverallVerdict::NoResults
    } else if headlines.contains(&Verdict::Regression) {
        OverallVerdict::Regression
    } else if headlines.contains(&Verdict::Improvement) {
        OverallVerdict::Improvement
    } else if !headlines.is_empty()
        && headlines.len() == report.groups.len()
        && headlines.iter().all(|v| *v == Verdict::NoChange)
    {
        OverallVerdict::NoChange
    } else {
        OverallVerdict::Undecided
    };
    VerdictView {
        overall,
        headlines: by_importance(&report.groups, |g| &g.comparison)
            .into_iter()
            .map(|g| summary_line(&g.comparison))
            .collect(),
        text_url,
        reports: report.groups.iter().map(|g| g.comparison.clone()).collect(),
    }
}

/// The text report: one 0-day style report per (workload, mode, nr_task),
/// the most important first, so that its first line is that report's.
pub fn text_report(report: &ComparisonReport) -> String {
    text_report_linking(report, None)
}

/// The text report with every header's `report:` line set to `report_url`
/// when one is given (a mail links absolutely, whatever server built the
/// stored report).
pub fn text_report_linking(report: &ComparisonReport, report_url: Option<&str>) -> String {
    if report.groups.is_empty() {
        return "patchperf has no results for this comparison yet.\n".into();
    }
    let opts = TextOptions::default();
    by_importance(&report.groups, |g| &g.comparison)
        .into_iter()
        .map(|g| match report_url {
            Some(url) => {
                let mut c = g.comparison.clone();
                c.header.report_url = Some(url.to_string());
                render(&c, &opts)
            }
            None => render(&g.comparison, &opts),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Comparison `c`'s text report (`report.txt`), rendered once per built
/// report and kept with it.
pub async fn text(ctx: &Context, c: &ComparisonRow) -> Result<Arc<str>, Error> {
    let built = super::load_shared(ctx, c).await?;
    Ok(match ctx.reports.rendered(c.id, &built, "text") {
        Some(text) => text,
        None => ctx
            .reports
            .keep_rendered(c.id, &built, "text", text_report(&built)),
    })
}
