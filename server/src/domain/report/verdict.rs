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

impl VerdictView {
    /// With every report's `report:` link set to `report_url`, where the
    /// page is as this server serves it: a stored report keeps the link
    /// of the server that built it, relative when that one had no
    /// `--public-url`.
    #[must_use]
    pub fn linking(mut self, report_url: &str) -> Self {
        for r in &mut self.reports {
            r.header.report_url = Some(report_url.to_string());
        }
        self
    }
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
/// the most important first, so that its first line is that report's;
/// every header's `report:` line set to `report_url` when one is given (a
/// served report links as the server serving it does, a mail absolutely,
/// whatever server built the stored report).
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

/// The text report as a mail carries it (a list's reply, a tree's change
/// mail): every report whose headline moved in full, the most important
/// first; those that showed no change beyond the noise in one line naming
/// them, their tables a link away. A mail about one change need not carry
/// every unchanged workload's table (a two-patch reply ran to 217 lines).
pub fn text_for_mail(report: &ComparisonReport, report_url: &str) -> String {
    let moved = |g: &&super::GroupReport| {
        g.comparison
            .headline_metric()
            .is_some_and(|m| m.verdict.is_change())
    };
    let (changed, calm): (Vec<_>, Vec<_>) = report.groups.iter().partition(moved);
    if changed.is_empty() {
        return text_report_linking(report, Some(report_url));
    }
    let shown = ComparisonReport {
        groups: changed.into_iter().cloned().collect(),
    };
    let mut text = text_report_linking(&shown, Some(report_url));
    if !calm.is_empty() {
        let kinds: Vec<String> = calm
            .iter()
            .map(|g| {
                let h = &g.comparison.header;
                format!("{} ({} · {})", h.workload, h.mode.as_str(), h.nr_task)
            })
            .collect();
        text.truncate(text.trim_end().len());
        text.push_str(&format!(
            "\n\nAlso measured, no change beyond the noise: {}.\nTheir tables: {report_url}\n",
            kinds.join(", ")
        ));
    }
    text
}

/// Comparison `c`'s text report (`report.txt`), rendered once per built
/// report and kept with it.
pub async fn text(ctx: &Context, c: &ComparisonRow) -> Result<Arc<str>, Error> {
    let built = super::load_shared(ctx, c).await?;
    Ok(match ctx.reports.rendered(c.id, &built, "text") {
        Some(text) => text,
        None => {
            // Linked as this server links, not as the one that built it.
            let url = ctx.config.link(&format!("/comparisons/{}", c.id));
            let text = text_report_linking(&built, Some(&url));
            ctx.reports.keep_rendered(c.id, &built, "text", text)
        }
    })
}

#[cfg(test)]
mod tests {
    use patchperf_common::report::build::{build_comparison, header_from_runs};
    use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
    use patchperf_common::stats::VerdictPolicy;

    use super::*;
    use crate::domain::report::GroupReport;

    fn run(workload: &str, ops: f64) -> RunResult {
        RunResult {
            workload: workload.into(),
            mode: TaskMode::Process,
            nr_task: 1,
            warmup_seconds: 1,
            seconds: 1,
            measurement: MeasurementMode::TcgIcount,
            kernel: None,
            samples: Vec::new(),
            metrics: vec![MetricValue {
                name: "will-it-scale.per_process_ops".into(),
                value: ops,
            }],
            series: Vec::new(),
            unsupported: Vec::new(),
            profile_event: None,
            warnings: Vec::new(),
        }
    }

    /// `workload`'s report: patched runs `factor` times as fast.
    fn group(workload: &str, factor: f64) -> GroupReport {
        let side = |f: f64| -> Vec<RunResult> {
            (0..4)
                .map(|i| run(workload, 1000.0 * f * (1.0 + 0.0001 * f64::from(i))))
                .collect()
        };
        let (base, patched) = (side(1.0), side(factor));
        let header = header_from_runs("lab-1", &base, &patched);
        GroupReport {
            comparison: build_comparison(header, &base, &patched, &VerdictPolicy::default())
                .unwrap(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn a_mail_carries_the_reports_that_moved_and_names_the_rest() {
        let report = ComparisonReport {
            groups: vec![
                group("dup1", 1.0),
                group("open1", 0.9),
                group("fstat1", 1.0),
            ],
        };
        let url = "https://perf.example.org/comparisons/7";
        let mail = text_for_mail(&report, url);
        assert!(mail.contains("on open1 · process"), "{mail}");
        assert!(
            !mail.contains("on dup1 ·") && !mail.contains("on fstat1 ·"),
            "{mail}"
        );
        assert!(!mail.contains("\n\n\n"), "{mail}");
        assert!(
            mail.ends_with(
                "Also measured, no change beyond the noise: dup1 (process · 1), fstat1 \
                 (process · 1).\nTheir tables: https://perf.example.org/comparisons/7\n"
            ),
            "{mail}"
        );
        assert!(mail.lines().count() < text_report_linking(&report, Some(url)).lines().count());
        // Nothing moved: the whole report, as before.
        let calm = ComparisonReport {
            groups: vec![group("dup1", 1.0)],
        };
        assert_eq!(
            text_for_mail(&calm, url),
            text_report_linking(&calm, Some(url))
        );
    }
}
