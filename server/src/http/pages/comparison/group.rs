//! The report of one (workload, mode, nr_task) on a comparison's page:
//! its table rows (with what the main table leaves to the tooltip), the
//! will-it-scale rows that repeat the headline folded into it, its plots,
//! per-run values and per-second series, and the scaling curves over
//! nr_task.

use std::fmt::Write as _;

use patchperf_common::metric;
use patchperf_common::report::text::{
    TextOptions, pipeline_line, selected_rows, summary_sentence, unsupported_line,
};
use patchperf_common::report::{Comparison, MetricComparison, format};
use patchperf_common::stats::verdict::delta_text;
use patchperf_common::stats::{ChangeUnit, Verdict, looks};

use super::super::plot::{self, PlotQuery};
use super::super::view;
use super::MAX_PLOTS;
use crate::AppState;
use crate::domain::comparison::overview::PerSecondRow;
use crate::domain::report::GroupReport;
use crate::domain::report::offload::off_workers;
use crate::error::Result;
use crate::http::pages::plot::svg;

/// One metric row.
#[derive(Debug)]
pub struct RowView {
    pub(crate) name: String,
    pub(crate) base: String,
    pub(crate) change: String,
    pub(crate) patched: String,
    pub(crate) interval: String,
    pub(crate) p: String,
    pub(crate) q: String,
    pub(crate) mw: String,
    pub(crate) zero_day: &'static str,
    pub(crate) verdict: &'static str,
    pub(crate) verdict_class: &'static str,
    pub(crate) reason: String,
    /// The name cut after each dot, so that it wraps between its parts
    /// and never inside a word.
    pub(crate) name_parts: Vec<String>,
    /// The relative change, for a metric that is not itself a percentage.
    pub(crate) change_percent: String,
    /// The change in points, for a metric that is itself a percentage.
    pub(crate) change_points: String,
    /// Why, with what the main table leaves out (Mann–Whitney's p, 0-day's
    /// range rule), for the verdict's tooltip.
    pub(crate) detail: String,
    /// Rows left out of the main table for showing the very same change.
    pub(crate) same_as: Vec<String>,
}

/// One run of a report.
#[derive(Debug)]
pub struct RunLine {
    pub(crate) boot_seq: i32,
    pub(crate) side: &'static str,
    pub(crate) job_id: i64,
    pub(crate) values: Vec<String>,
}

/// One (workload, mode, nr_task) report.
#[derive(Debug)]
pub struct GroupView {
    pub(crate) title: String,
    pub(crate) headline: String,
    pub(crate) measurement: String,
    /// `95%`, more while boots are added (the level spent over the looks).
    pub(crate) interval_label: String,
    /// Build and boot times of the kernels (not judged).
    pub(crate) pipeline: Option<String>,
    /// Whether functions were aligned in both kernels.
    pub(crate) code_layout: Option<String>,
    /// δ the verdicts used and where it came from.
    pub(crate) delta: Option<String>,
    /// The metrics this machine could not count, in one sentence.
    pub(crate) unsupported: Option<String>,
    pub(crate) rows: Vec<RowView>,
    /// Why, in a handful of sentences: the headline's verdict and what
    /// else moved, the largest named (the table has every row).
    pub(crate) why: Vec<String>,
    /// What the table's columns mean, with this report's numbers.
    pub(crate) legend: String,
    /// Metrics in the report, all shown on the metrics page.
    pub(crate) total: usize,
    pub(crate) hidden: usize,
    pub(crate) run_metrics: Vec<String>,
    pub(crate) runs: Vec<RunLine>,
    /// Each plot with the URL of its standalone SVG.
    pub(crate) plots: Vec<PlotView>,
    pub(crate) series: Option<PlotView>,
}

/// An inline plot and the address of the same plot on its own.
#[derive(Debug)]
pub struct PlotView {
    pub(crate) svg: String,
    pub(crate) href: String,
}

/// A scaling curve over nr_task.
#[derive(Debug)]
pub struct ScalingView {
    pub(crate) title: String,
    pub(crate) svg: String,
}

pub(crate) fn row_view(m: &MetricComparison) -> RowView {
    RowView {
        name: m.name.clone(),
        base: format::side_text(&m.base),
        change: format::change_text(m),
        patched: format::side_text(&m.patched),
        interval: format::interval_text(m),
        p: format::p_text(m.welch.map(|w| w.p)),
        q: format::p_text(m.q),
        mw: format::p_text(m.mann_whitney.map(|w| w.p)),
        zero_day: match m.zero_day {
            Some(z) if z.changed => "changed",
            Some(_) => "unchanged",
            None => "",
        },
        verdict: m.verdict_words(),
        verdict_class: view::verdict_class(m.verdict),
        reason: m.reason.clone(),
        name_parts: name_parts(&m.name),
        change_percent: match m.unit {
            ChangeUnit::Percent => format::change_text(m),
            ChangeUnit::Points => String::new(),
        },
        change_points: match m.unit {
            ChangeUnit::Points => format::change_text(m),
            ChangeUnit::Percent => String::new(),
        },
        detail: detail(m),
        same_as: Vec::new(),
    }
}

/// `perf-stat.`, `ps.`, `cycles`: a name's parts with their dots.
fn name_parts(name: &str) -> Vec<String> {
    let mut parts: Vec<String> = name.split_inclusive('.').map(str::to_string).collect();
    if parts.is_empty() {
        parts.push(String::new());
    }
    parts
}

/// The verdict's reason, then Mann–Whitney's p and 0-day's range rule,
/// which say little at a few runs a side (Mann–Whitney's p cannot go
/// below 0.1 with 3 runs a side) and so live behind the verdict (opened,
/// or its tooltip).
fn detail(m: &MetricComparison) -> String {
    let mut d = m.reason.clone();
    if let Some(mw) = m.mann_whitney {
        let n = m.base.values.len().min(m.patched.values.len());
        let _ = write!(d, "; Mann–Whitney p {}", format::p_text(Some(mw.p)));
        if n <= 3 {
            d.push_str(" (its smallest possible with 3 runs a side is 0.1)");
        }
    }
    match m.zero_day {
        Some(z) if z.changed => d.push_str("; 0-day's range rule: changed"),
        Some(_) => d.push_str("; 0-day's range rule: unchanged"),
        None => {}
    }
    d
}

/// Drops from `shown` the will-it-scale rows that repeat the headline's
/// change (at one task `will-it-scale.1.processes` and
/// `will-it-scale.workload` move exactly as `per_process_ops`), naming
/// them on the headline's row instead.
fn fold_identical_wis(c: &Comparison, shown: &mut Vec<&MetricComparison>) -> Vec<String> {
    let h = &c.header;
    let Some(head) = shown
        .iter()
        .find(|m| m.name == metric::wis_per_task_ops(h.mode))
        .copied()
    else {
        return Vec::new();
    };
    let same = |m: &MetricComparison| match (m.change, head.change) {
        (Some(a), Some(b)) => {
            m.verdict == head.verdict && (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
        }
        _ => false,
    };
    let twins = [
        metric::wis_scaling(h.nr_task, h.mode),
        metric::WIS_WORKLOAD.to_string(),
    ];
    let folded: Vec<String> = twins
        .into_iter()
        .filter(|t| shown.iter().any(|m| m.name == *t && same(m)))
        .collect();
    shown.retain(|m| !folded.contains(&m.name));
    folded
}

/// Most other metrics "Why" names for each kind of real change.
const NAMED_PER_VERDICT: usize = 3;

/// Why, in at most four sentences: the headline's verdict with its reason,
/// then per kind of real change (regressions, improvements, changes) how
/// many other metrics moved so, the largest named.
fn why(c: &Comparison) -> Vec<String> {
    let head = c.headline_metric();
    let mut out: Vec<String> = head
        .map(|m| {
            format!(
                "{}: {}, {}: {}",
                m.name,
                m.verdict_words(),
                format::change_text(m),
                m.reason
            )
        })
        .into_iter()
        .collect();
    let others = if head.is_some() { "other " } else { "" };
    for (verdict, words) in [
        (Verdict::Regression, "regressed"),
        (Verdict::Improvement, "improved"),
        (Verdict::Changed, "changed"),
    ] {
        let mut moved: Vec<&MetricComparison> = c
            .metrics
            .iter()
            .filter(|m| m.verdict == verdict && Some(&m.name) != head.map(|h| &h.name))
            .collect();
        if moved.is_empty() {
            continue;
        }
        moved.sort_by(|a, b| {
            let size = |m: &MetricComparison| m.change.map_or(0.0, f64::abs);
            size(b).total_cmp(&size(a))
        });
        let named: Vec<String> = moved
            .iter()
            .take(NAMED_PER_VERDICT)
            .map(|m| format!("{} {}", m.name, format::change_text(m)))
            .collect();
        let n = moved.len();
        let plural = if n == 1 { "" } else { "s" };
        let largest = if n == 1 { "" } else { "the largest " };
        out.push(format!(
            "{n} {others}metric{plural} {words} for real: {largest}{}",
            named.join(", ")
        ));
    }
    out
}

pub(super) async fn group_view(
    state: &AppState,
    comparison_id: i64,
    g: &GroupReport,
    series: &[PerSecondRow],
) -> Result<GroupView> {
    let c: &Comparison = &g.comparison;
    let h = &c.header;
    // The page's main table: what a reader acts on. The text report keeps
    // 0-day's selection (every row either rule calls changed); here rows
    // only 0-day's range rule flags (mostly small perf-profile entries) sit
    // with the rest under "all metrics".
    let shown: Vec<&MetricComparison> = selected_rows(c, &TextOptions::default())
        .into_iter()
        .filter(|m| {
            m.name.starts_with("will-it-scale.")
                || m.verdict.is_change()
                || m.name.starts_with("perf-stat.")
                || m.base.presence != m.patched.presence
        })
        .collect();
    let mut shown = shown;
    let folded = fold_identical_wis(c, &mut shown);
    let headline_row = metric::wis_per_task_ops(h.mode);
    let rows: Vec<RowView> = shown
        .iter()
        .map(|m| RowView {
            same_as: if m.name == headline_row {
                folded.clone()
            } else {
                Vec::new()
            },
            ..row_view(m)
        })
        .collect();
    let delta = c.policy.threshold(ChangeUnit::Percent);
    let legend = format!(
        "base and patched: mean ± standard deviation in % of the mean (0-day's %stddev), \
         {} runs a side; %change: of the mean (Δ points instead for a metric that is itself \
         a percentage); {} interval: of that change; q: Welch's p adjusted for the {} \
         metrics of this report (Benjamini–Hochberg). A change is called real when q ≤ {} \
         and its whole interval lies beyond ±{}%. Open a verdict (or point at it) for \
         why, with Mann–Whitney's p and 0-day's own range rule.",
        c.base_runs.min(c.patched_runs),
        c.policy.interval_label(),
        c.metrics.len(),
        looks::level_label(c.policy.fdr),
        delta_text(delta)
    );

    // Plots: the headline metric, then the changed ones in table order.
    let mut plotted: Vec<&MetricComparison> = Vec::new();
    if let Some(m) = c.headline_metric() {
        plotted.push(m);
    }
    for m in &shown {
        if plotted.len() >= MAX_PLOTS {
            break;
        }
        if m.verdict.is_change() && !plotted.iter().any(|p| p.name == m.name) {
            plotted.push(m);
        }
    }
    let hrefs: Vec<String> = plotted
        .iter()
        .map(|m| PlotQuery::link(comparison_id, "runs", g, Some(&m.name)))
        .collect();
    let plotted: Vec<MetricComparison> = plotted.into_iter().cloned().collect();
    let policy = c.policy;
    let svgs = off_workers(
        state.config.report_time_limit,
        &format!("the plots of comparison {comparison_id}"),
        move || {
            plotted
                .iter()
                .map(|m| svg::runs_plot(m, &policy))
                .collect::<Vec<_>>()
        },
    )
    .await?;
    let plots = svgs
        .into_iter()
        .zip(hrefs)
        .filter_map(|(svg, href)| Some(PlotView { svg: svg?, href }))
        .collect();

    // The per-second series of every run: total ops each second.
    let series = plot::series_svg(state, comparison_id, g, series)
        .await?
        .map(|svg| PlotView {
            svg,
            href: PlotQuery::link(comparison_id, "series", g, None),
        });

    // Per-run values of the will-it-scale metrics.
    let run_metrics: Vec<String> = c
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("will-it-scale."))
        .map(|m| m.name.clone())
        .collect();
    let runs = g
        .runs
        .iter()
        .map(|r| RunLine {
            boot_seq: r.boot_seq,
            side: r.side.as_str(),
            job_id: r.job_id,
            values: run_metrics
                .iter()
                .map(|name| {
                    r.result
                        .metric(name)
                        .map(|v| {
                            patchperf_common::report::format::mean_column(v)
                                .trim()
                                .to_string()
                        })
                        .unwrap_or_else(|| "-".into())
                })
                .collect(),
        })
        .collect();

    Ok(GroupView {
        title: h.title(),
        headline: summary_sentence(c),
        interval_label: c.policy.interval_label(),
        measurement: h
            .measurement
            .map(|m| format!("measurement {}: {}", m.as_str(), m.explanation()))
            .unwrap_or_default(),
        pipeline: pipeline_line(c),
        code_layout: h.code_layout.clone(),
        delta: h.delta_source.clone(),
        unsupported: Some(unsupported_line(c, &shown))
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty()),
        hidden: c.metrics.len() - shown.len() - folded.len(),
        rows,
        why: why(c),
        legend,
        total: c.metrics.len(),
        run_metrics,
        runs,
        plots,
        series,
    })
}

/// One scaling curve per (workload, mode) measured at several nr_task:
/// the mean per-task ops of each kernel.
pub(super) async fn scaling_views(
    state: &AppState,
    comparison_id: i64,
    groups: &[GroupReport],
) -> Result<Vec<ScalingView>> {
    let mut curves = Vec::new();
    let mut seen: Vec<(String, &'static str)> = Vec::new();
    for g in groups {
        let h = &g.comparison.header;
        let key = (h.workload.clone(), h.mode.as_str());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let name = metric::wis_per_task_ops(h.mode);
        let mut points: Vec<svg::ScalingPoint> = groups
            .iter()
            .filter(|o| {
                o.comparison.header.workload == key.0 && o.comparison.header.mode.as_str() == key.1
            })
            .filter_map(|o| {
                let m = o.comparison.metric(&name)?;
                Some(svg::ScalingPoint {
                    nr_task: o.comparison.header.nr_task,
                    base: m.base.mean,
                    patched: m.patched.mean,
                    delta_percent: o.comparison.policy.threshold(m.unit),
                })
            })
            .collect();
        points.sort_by_key(|p| p.nr_task);
        curves.push((format!("{} · {}", key.0, key.1), name, points));
    }
    off_workers(
        state.config.report_time_limit,
        &format!("the scaling plots of comparison {comparison_id}"),
        move || {
            curves
                .into_iter()
                .filter_map(|(title, name, points)| {
                    Some(ScalingView {
                        title,
                        svg: svg::scaling_plot(&name, &points)?,
                    })
                })
                .collect()
        },
    )
    .await
}
