//! `/comparisons/{id}`: the report page of one comparison: its verdicts and
//! intervals, the 0-day table's numbers, the boot order, the jobs with their
//! logs, per-run values and plots. While jobs run, a small script follows
//! the comparison's JSON and reloads the page when something changed.

use std::fmt::Write as _;

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use patchperf_common::comparison::ComparisonKind;
use patchperf_common::report::summary::headline_sentence;
use patchperf_common::report::text::{
    TextOptions, pipeline_line, selected_rows, summary_line, unsupported_line,
};
use patchperf_common::report::{Comparison, MetricComparison, format, importance};
use patchperf_common::run::Side;
use patchperf_common::stats::verdict::delta_text;
use patchperf_common::stats::{ChangeUnit, looks};
use patchperf_common::{mbox, metric};

use super::plot::{self, PlotQuery};
use super::{steps, view};
use crate::db::comparisons::ComparisonRow;
use crate::db::runs::SeriesRow;
use crate::domain::report;
use crate::domain::report::offload::off_workers;
use crate::domain::report::verdict::verdict_view;
use crate::domain::report::{ComparisonReport, GroupReport, plots};
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error, db};

/// Most per-metric plots shown per report (headline first, then the
/// changed metrics in table order).
const MAX_PLOTS: usize = 9;

/// One boot of the boot order.
#[derive(Debug)]
pub struct BootCell {
    seq: i32,
    side: &'static str,
    letter: char,
    job_id: i64,
}

/// One job.
#[derive(Debug)]
pub struct JobLine {
    /// The job's id, the one number the job log and the machine page use.
    id: i64,
    boots: String,
    state: &'static str,
    attempt: String,
    message: String,
    failure: Option<String>,
}

/// One metric row.
#[derive(Debug)]
pub struct RowView {
    pub(super) name: String,
    pub(super) base: String,
    pub(super) change: String,
    pub(super) patched: String,
    pub(super) interval: String,
    pub(super) p: String,
    pub(super) q: String,
    pub(super) mw: String,
    pub(super) zero_day: &'static str,
    pub(super) verdict: &'static str,
    pub(super) verdict_class: &'static str,
    pub(super) reason: String,
    /// Listed under "Why" (the headline and every real change).
    pub(super) listed: bool,
    /// The name cut after each dot, so that it wraps between its parts
    /// and never inside a word.
    pub(super) name_parts: Vec<String>,
    /// The relative change, for a metric that is not itself a percentage.
    pub(super) change_percent: String,
    /// The change in points, for a metric that is itself a percentage.
    pub(super) change_points: String,
    /// Why, with what the main table leaves out (Mann–Whitney's p, 0-day's
    /// range rule), for the verdict's tooltip.
    pub(super) detail: String,
    /// Rows left out of the main table for showing the very same change.
    pub(super) same_as: Vec<String>,
}

/// One run of a report.
#[derive(Debug)]
pub struct RunLine {
    boot_seq: i32,
    side: &'static str,
    job_id: i64,
    values: Vec<String>,
}

/// One (workload, mode, nr_task) report.
#[derive(Debug)]
pub struct GroupView {
    title: String,
    headline: String,
    measurement: String,
    /// `95%`, more while boots are added (the level spent over the looks).
    interval_label: String,
    /// Build and boot times of the kernels (not judged).
    pipeline: Option<String>,
    /// Whether functions were aligned in both kernels.
    code_layout: Option<String>,
    /// δ the verdicts used and where it came from.
    delta: Option<String>,
    /// The metrics this machine could not count, in one sentence.
    unsupported: Option<String>,
    rows: Vec<RowView>,
    /// What the table's columns mean, with this report's numbers.
    legend: String,
    /// Metrics in the report, all shown on the metrics page.
    total: usize,
    hidden: usize,
    run_metrics: Vec<String>,
    runs: Vec<RunLine>,
    /// Each plot with the URL of its standalone SVG.
    plots: Vec<PlotView>,
    series: Option<PlotView>,
}

/// An inline plot and the address of the same plot on its own.
#[derive(Debug)]
pub struct PlotView {
    svg: String,
    href: String,
}

/// A scaling curve over nr_task.
#[derive(Debug)]
pub struct ScalingView {
    title: String,
    svg: String,
}

/// One report's answer in a sentence, first on the page.
#[derive(Debug)]
pub struct SummaryLine {
    verdict: &'static str,
    class: &'static str,
    sentence: String,
    /// Why it moved ([`patchperf_common::report::explain`]), cut into
    /// plain text and code (the `symbols` it names).
    why: Vec<(String, bool)>,
}

/// What identifies the patch: who, when, where it was posted, its size.
#[derive(Debug)]
pub struct PatchFacts {
    /// `3 patches` or the one patch's subject.
    what: String,
    author: String,
    date: Option<String>,
    /// The message-id and its lore.kernel.org address.
    lore: Option<(String, String)>,
    diffstat: String,
    mbox_url: String,
}

#[derive(Debug, Template)]
#[template(path = "comparison.html")]
pub(super) struct ComparisonPage {
    title: String,
    /// Each report's answer, before anything else.
    summary: Vec<SummaryLine>,
    /// The patch, identified.
    patch: Option<PatchFacts>,
    live: bool,
    json_url: String,
    text_url: String,
    /// Every metric of the report, on its own page.
    metrics_url: String,
    /// The differential profile, when the runs were profiled.
    profile_url: Option<String>,
    overall: &'static str,
    overall_class: String,
    status: &'static str,
    base: String,
    subjects: Vec<String>,
    series_sha256: String,
    machine: Option<String>,
    machine_description: Option<String>,
    workloads: String,
    params: String,
    runs_per_side: i32,
    more_runs: String,
    waiting: Option<String>,
    stored_base: usize,
    stored_patched: usize,
    expected_per_side: usize,
    submitted_by: String,
    created: String,
    order_seed: u64,
    boots: Vec<BootCell>,
    jobs: Vec<JobLine>,
    groups: Vec<GroupView>,
    scaling: Vec<ScalingView>,
    /// A per-patch comparison's steps, one row per patch.
    steps: steps::StepsTable,
    /// On a step: which patch against which, and the whole series' page.
    step_of: Option<(String, String)>,
    /// A git range's comparison: the range, short ids.
    range: Option<String>,
    /// Built over a tracked tree's anchor: its short id and how many
    /// commits ride on it.
    built_over: Option<(String, usize)>,
    /// The commit the patched side is (a range's end, a step's, a probe's).
    commit: Option<String>,
    /// On a bisection's probe: the bisection's page and which probe.
    probe_of: Option<(String, String)>,
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Html<String>> {
    let c = db::comparisons::find(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    let built = report::load_shared(&state, &c).await?;
    // Once settled, the page changes only with its report (a new noise
    // floor), so it is rendered once per report.
    let settled = c.status.is_settled();
    if settled {
        if let Some(kept) = state.reports.rendered(id, &built, "page") {
            return Ok(Html(kept.to_string()));
        }
    }
    let html = page_of(&state, &c, &built)
        .await?
        .render()
        .map_err(|e| Error::Internal(format!("rendering the page of comparison {id}: {e}")))?;
    if settled {
        state
            .reports
            .keep_rendered(id, &built, "page", html.clone());
    }
    Ok(Html(html))
}

/// The patch's author, date, posting and size, from its stored mbox (the
/// first patch's headers for a series); `None` for an A/A comparison.
async fn patch_facts(state: &AppState, c: &ComparisonRow) -> Result<Option<PatchFacts>> {
    let (text, _) = db::patches::mbox(&state.db, c.series_id).await?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let Ok(series) = mbox::parse(&text) else {
        return Ok(None);
    };
    let patches: Vec<_> = series.messages.iter().filter(|m| m.has_diff).collect();
    let Some(first) = patches.first() else {
        return Ok(None);
    };
    let what = if patches.len() == 1 {
        first.subject.clone()
    } else {
        format!("{} patches, the first: {}", patches.len(), first.subject)
    };
    Ok(Some(PatchFacts {
        what,
        author: first.author.clone(),
        date: first
            .date
            .and_then(|d| chrono::DateTime::from_timestamp(d, 0))
            .map(view::time),
        lore: first.message_id.as_ref().map(|id| {
            (
                format!("https://lore.kernel.org/r/{}", view::url_encode(id)),
                id.clone(),
            )
        }),
        diffstat: mbox::diffstat(&text).to_string(),
        mbox_url: format!("/comparisons/{}/series.mbox", c.id),
    }))
}

async fn page_of(
    state: &AppState,
    c: &ComparisonRow,
    built: &ComparisonReport,
) -> Result<ComparisonPage> {
    let id = c.id;
    let waiting = crate::domain::waiting::note(&state.db, c).await?;
    let messages = db::patches::messages(&state.db, c.series_id).await?;
    let boots = db::boots::for_comparison(&state.db, id).await?;
    let jobs = db::jobs::for_comparison(&state.db, id).await?;
    let series_sha256 = db::patches::series_sha256(&state.db, c.series_id).await?;
    let step_views = crate::domain::steps::views(state, c).await?;
    let step_of = crate::domain::steps::step_of(state, c).await?;
    let probe_of = probe_of(state, id).await?;

    let names: Vec<String> = built.groups.iter().map(plot::series_name).collect();
    let series = db::runs::series(&state.db, id, &names).await?;
    let mut groups = Vec::with_capacity(built.groups.len());
    for g in &built.groups {
        groups.push(group_view(state, id, g, &series).await?);
    }
    let verdict = verdict_view(built, String::new());
    // The most important first: the page's first sentence is the
    // report's worst verdict, as in the text and the listing.
    let summary = importance::by_importance(&built.groups, |g| &g.comparison)
        .into_iter()
        .filter_map(|g| {
            let m = g.comparison.headline_metric()?;
            Some(SummaryLine {
                verdict: m.verdict_words(),
                class: view::verdict_class(m.verdict),
                sentence: headline_sentence(&g.comparison)?,
                why: g
                    .comparison
                    .explanation
                    .as_deref()
                    .map_or_else(Vec::new, view::code_spans),
            })
        })
        .collect();
    let patch = patch_facts(state, c).await?;
    let subjects: Vec<String> = messages.iter().map(|m| m.subject.clone()).collect();
    let first_subject = messages
        .iter()
        .find(|m| m.has_diff)
        .map(|m| m.subject.clone());
    let stored = |side: Side| {
        built
            .groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter(|r| r.side == side)
            .count()
    };
    let per_boot = c.workloads.len() * c.params.0.nr_task.len();
    let p = &c.params.0;
    Ok(ComparisonPage {
        summary,
        patch,
        title: if c.kind == ComparisonKind::Aa {
            format!(
                "A/A: {} against itself (the machine's noise floor)",
                c.base.0.describe()
            )
        } else {
            match (&step_of, &probe_of) {
                (Some(s), _) => steps::step_line(s),
                // A probe measures its last commit, on top of those before.
                (None, Some((_, probe))) => {
                    let last = messages.iter().rev().find(|m| m.has_diff);
                    let title = last.map(|m| mbox::Subject::parse(&m.subject).title);
                    format!(
                        "{probe}: `{}` against the good end",
                        title.unwrap_or_default()
                    )
                }
                (None, None) => first_subject.unwrap_or_else(|| format!("comparison {id}")),
            }
        },
        live: !c.status.is_final(),
        json_url: format!("/api/v1/comparisons/{id}"),
        text_url: format!("/api/v1/comparisons/{id}/report.txt"),
        metrics_url: format!("/comparisons/{id}/metrics"),
        profile_url: built
            .groups
            .iter()
            .flat_map(|g| &g.comparison.metrics)
            .any(|m| m.name.starts_with("perf-profile.children."))
            .then(|| format!("/comparisons/{id}/profile")),
        overall: verdict.overall.as_str(),
        overall_class: view::overall_class(verdict.overall),
        status: c.status.as_str(),
        base: c.base.0.describe(),
        subjects,
        series_sha256,
        machine: c.machine_name.clone(),
        machine_description: groups_description(&built.groups),
        workloads: c.workloads.join(", "),
        params: format!(
            "mode {}, nr_task {}, {} s measured after {} s warm-up{}{}",
            p.mode.as_str(),
            p.nr_task
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            p.seconds,
            p.warmup_seconds,
            if p.perf_stat { ", perf stat" } else { "" },
            if p.perf_profile { ", perf profile" } else { "" },
        ),
        runs_per_side: c.runs_per_side,
        more_runs: more_runs_text(c),
        waiting,
        stored_base: stored(Side::Base),
        stored_patched: stored(Side::Patched),
        expected_per_side: usize::try_from(c.runs_per_side).unwrap_or(0) * per_boot,
        submitted_by: c.submitted_by.clone(),
        created: view::time(c.created_at),
        order_seed: c.order_seed as u64,
        boots: boots
            .iter()
            .map(|b| BootCell {
                seq: b.seq,
                letter: b.side.letter(),
                side: b.side.as_str(),
                job_id: b.job_id,
            })
            .collect(),
        jobs: jobs
            .iter()
            .map(|j| JobLine {
                id: j.id,
                boots: boots
                    .iter()
                    .filter(|b| b.job_id == j.id)
                    .map(|b| format!("{}{}", b.seq, b.side.letter()))
                    .collect::<Vec<_>>()
                    .join(" "),
                state: j.state.as_str(),
                attempt: format!("{}/{}", j.attempt, j.max_attempts),
                message: j.message.clone(),
                failure: j
                    .failure_reason
                    .map(|r| view::failure_text(r, j.failure_detail.as_deref())),
            })
            .collect(),
        scaling: scaling_views(state, id, &built.groups).await?,
        groups,
        steps: steps::table(&step_views),
        step_of: step_of.map(|s| {
            (
                format!("/comparisons/{}", s.parent_id),
                format!("the whole series of {} patches", s.of),
            )
        }),
        range: c.git_range.as_deref().map(view::short_range),
        built_over: match (&c.built_over, c.carried_series_id) {
            (Some(over), Some(carried)) => Some((
                view::short_commit(over).to_string(),
                db::patches::messages(&state.db, carried)
                    .await?
                    .iter()
                    .filter(|m| m.has_diff)
                    .count(),
            )),
            _ => None,
        },
        commit: c
            .commit_sha
            .as_deref()
            .map(|sha| view::short_commit(sha).to_string()),
        probe_of,
    })
}

/// On a bisection's probe: the bisection's page and `probe 4/7 of
/// bisection 2`.
async fn probe_of(state: &AppState, id: i64) -> Result<Option<(String, String)>> {
    let Some((bisection, position)) = db::comparisons::probe_of(&state.db, id).await? else {
        return Ok(None);
    };
    let b = db::bisections::find(&state.db, bisection)
        .await?
        .ok_or_else(|| Error::Internal(format!("bisection {bisection} vanished")))?;
    let n = crate::domain::bisect::series_len(state, &b).await?;
    Ok(Some((
        format!("/bisections/{bisection}"),
        format!("probe {position}/{n} of bisection {bisection}"),
    )))
}

fn groups_description(groups: &[GroupReport]) -> Option<String> {
    groups
        .first()
        .and_then(|g| g.comparison.header.machine_description.clone())
}

pub(super) fn row_view(m: &MetricComparison, listed: bool) -> RowView {
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
        listed,
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
/// below 0.1 with 3 runs a side) and so live in the tooltip.
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

async fn group_view(
    state: &AppState,
    comparison_id: i64,
    g: &GroupReport,
    series: &[SeriesRow],
) -> Result<GroupView> {
    let c: &Comparison = &g.comparison;
    let h = &c.header;
    let headline_name = c.headline_metric().map(|m| m.name.clone());
    let is_listed =
        |m: &MetricComparison| Some(&m.name) == headline_name.as_ref() || m.verdict.is_change();
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
            ..row_view(m, is_listed(m))
        })
        .collect();
    let delta = c.policy.threshold(ChangeUnit::Percent);
    let legend = format!(
        "base and patched: mean ± standard deviation in % of the mean (0-day's %stddev), \
         {} runs a side; %change: of the mean (Δ points instead for a metric that is itself \
         a percentage); {} interval: of that change; q: Welch's p adjusted for the {} \
         metrics of this report (Benjamini–Hochberg). A change is called real when q ≤ {} \
         and its whole interval lies beyond ±{}%. Point at a verdict for why, with \
         Mann–Whitney's p and 0-day's own range rule.",
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
                .map(|m| plots::runs_plot(m, &policy))
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
        title: format!(
            "{} · {} · nr_task {}",
            h.workload,
            h.mode.as_str(),
            h.nr_task
        ),
        // 0-day's "… on:" leads to the commit line of the text form; the
        // page shows the kernels elsewhere, so the sentence ends here.
        headline: format!("{}.", summary_line(c).trim_end_matches(" on:")),
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
async fn scaling_views(
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
        let mut points: Vec<plots::ScalingPoint> = groups
            .iter()
            .filter(|o| {
                o.comparison.header.workload == key.0 && o.comparison.header.mode.as_str() == key.1
            })
            .filter_map(|o| {
                let m = o.comparison.metric(&name)?;
                Some(plots::ScalingPoint {
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
                        svg: plots::scaling_plot(&name, &points)?,
                    })
                })
                .collect()
        },
    )
    .await
}

/// What the runs line says about boots added while undecided.
fn more_runs_text(c: &ComparisonRow) -> String {
    let Some(max) = c.max_runs_per_side else {
        return String::new();
    };
    let steps = c.runs_steps();
    if steps.is_empty() {
        return format!(" (up to {max} while the verdict is undecided)");
    }
    let steps: Vec<String> = steps.iter().map(u32::to_string).collect();
    format!(
        " (more added while undecided: {}, at most {max})",
        steps.join(" → ")
    )
}
