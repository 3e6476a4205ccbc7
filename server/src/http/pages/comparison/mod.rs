//! `/comparisons/{id}`: the report page of one comparison: its verdicts and
//! intervals, the 0-day table's numbers, the boot order, the jobs with their
//! logs, per-run values and plots. While jobs run, a small script follows
//! the comparison's JSON and reloads the page when something changed.

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use patchperf_common::comparison::{ComparisonKind, OverallVerdict};
use patchperf_common::report::culprit;
use patchperf_common::report::summary::{calibration_answer, headline_sentence};
use patchperf_common::report::{MetricComparison, format, importance};
use patchperf_common::run::Side;
use patchperf_common::{mbox, metric};

mod group;
mod link_views;

use self::group::{GroupView, ScalingView, group_view, scaling_views};
pub(crate) use self::group::{RowView, row_view};
use self::link_views::{Link, SeriesLinks, TreeLinks};
use super::plot;
use super::{steps, view};
use crate::domain::comparison::links::{self, Links};
use crate::domain::comparison::overview::ComparisonRow;
use crate::domain::comparison::{name, overview};
use crate::domain::report::verdict::verdict_view;
use crate::domain::report::{ComparisonReport, GroupReport};
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error};

/// Most per-metric plots shown per report (headline first, then the
/// changed metrics in table order).
pub(super) const MAX_PLOTS: usize = 9;

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

/// One report's answer in a sentence, first on the page.
#[derive(Debug)]
pub struct SummaryLine {
    verdict: &'static str,
    class: &'static str,
    /// The headline's change (`+4.8%`), then its means base → patched
    /// (`247474 → 259832 ops/s per task`), then the rest of the sentence.
    change: String,
    values: Option<String>,
    sentence: String,
    /// Why it moved ([`patchperf_common::report::explain`]), cut into
    /// plain text and code (the `symbols` it names).
    why: Vec<(String, bool)>,
    /// The step that moved it, for a series, range or push measured step
    /// by step ([`culprit`]): `patch 2/3 “…”`, `deffb20224 “…” (commit
    /// 2/3)`, with the step's page.
    culprit: Option<(String, i64)>,
}

/// Why a failed comparison failed, its first answer.
#[derive(Debug)]
pub struct FailureLine {
    /// `patch 2/3 does not apply`, `build failed: …`.
    line: String,
    /// The detail behind it: git's words and the hunk, a panic's text.
    evidence: Option<String>,
    /// The failed job, whose log has the rest.
    job_id: i64,
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
    /// Why it failed, before anything else.
    failure: Option<FailureLine>,
    /// Each report's answer, before anything else but a failure.
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
    /// What the overall line says (`verdict`, or `calibration` for an
    /// A/A), what and its class.
    overall: (&'static str, String, String),
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
    /// What runs for it now and about how long is left.
    progress: Option<String>,
    /// When the runs' per-second data was pruned (`domain::retention`).
    pruned: Option<String>,
    stored_base: usize,
    stored_patched: usize,
    expected_per_side: usize,
    submitted_by: String,
    created: String,
    order_seed: u64,
    boots: Vec<BootCell>,
    jobs: Vec<JobLine>,
    /// One per report, the worst first (`ComparisonReport::worst_first`).
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
    /// A list series' comparison: its series and list.
    series_links: Option<SeriesLinks>,
    /// A tracked tree's comparison: its tree, history and change points.
    tree: Option<TreeLinks>,
    /// Every bisection of it.
    bisections: Vec<Link>,
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Html<String>> {
    let (c, built) = overview::find(&state, id).await?;
    let links = links::of(&state, &c).await?;
    // Once settled, the page changes only with its report (a new noise
    // floor) and what it links to (a change point found, a bisection), so
    // it is rendered once per report and links.
    let settled = c.status.is_settled();
    let kept_as = format!("page {}", links.key());
    if settled {
        if let Some(kept) = state.reports.rendered(id, &built, &kept_as) {
            return Ok(Html(kept.to_string()));
        }
    }
    let html = page_of(&state, &c, &built, links)
        .await?
        .render()
        .map_err(|e| Error::Internal(format!("rendering the page of comparison {id}: {e}")))?;
    if settled {
        state
            .reports
            .keep_rendered(id, &built, &kept_as, html.clone());
    }
    Ok(Html(html))
}

/// The patch's author, date, posting and size, from its stored mbox (the
/// first patch's headers for a series); `None` for an A/A comparison.
async fn patch_facts(state: &AppState, c: &ComparisonRow) -> Result<Option<PatchFacts>> {
    let text = overview::mbox(state, c).await?;
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
    links: Links,
) -> Result<ComparisonPage> {
    let id = c.id;
    let overview::Overview {
        messages,
        series_sha256,
        jobs,
        boots,
        waiting,
        progress,
        pruned_at,
        steps: step_views,
        step_of,
        probe_of,
        carried_commits,
        run_length_pending,
        failure,
        expected_per_side,
        ..
    } = overview::gather(state, c).await?;
    let (tree, series_links, bisections) = link_views::views(links);
    let probe_of = probe_of.map(|p| {
        (
            format!("/bisections/{}", p.bisection_id),
            format!(
                "probe {}/{} of bisection {}",
                p.position, p.of, p.bisection_id
            ),
        )
    });

    let names: Vec<String> = built.groups.iter().map(plot::series_name).collect();
    let series = overview::per_second(state, id, &names).await?;
    // The reports' tables worst first: the regressing one is what a
    // reader scrolls for.
    let mut groups = Vec::with_capacity(built.groups.len());
    for g in built.worst_first() {
        groups.push(group_view(state, id, g, &series).await?);
    }
    let verdict = verdict_view(built, String::new());
    // The most important first: the page's first sentence is the
    // report's worst verdict, as in the text and the listing.
    let summary = importance::by_importance(&built.groups, |g| &g.comparison)
        .into_iter()
        .filter_map(|g| {
            let m = g.comparison.headline_metric()?;
            let sentence = headline_sentence(&g.comparison)?;
            if g.comparison.header.is_calibration() {
                // An A/A answers with the noise it measured, not a change.
                return Some(SummaryLine {
                    verdict: "calibration",
                    class: "calibration",
                    change: calibration_answer(&g.comparison)
                        .unwrap_or_else(|| "no noise floor yet".into()),
                    values: None,
                    sentence: format!(", from {sentence}"),
                    why: Vec::new(),
                    culprit: None,
                });
            }
            let change = format::change_text(m);
            let (change, sentence) = match sentence.strip_prefix(&change) {
                Some(rest) => (change, rest.to_string()),
                None => (String::new(), sentence),
            };
            Some(SummaryLine {
                verdict: m.verdict_words(),
                class: view::verdict_class(m.verdict),
                values: absolute_values(m).filter(|_| !change.is_empty()),
                change,
                sentence,
                why: g
                    .comparison
                    .explanation
                    .as_deref()
                    .map_or_else(Vec::new, view::code_spans),
                culprit: culprit::moved_by(&g.comparison, &step_views)
                    .map(|s| (culprit::step_words(s, step_views.len()), s.comparison_id)),
            })
        })
        .collect();
    let patch = patch_facts(state, c).await?;
    let named = name::of(&state.db, c, &messages).await?;
    let subjects: Vec<String> = messages.iter().map(|m| m.subject.clone()).collect();
    let stored = |side: Side| {
        built
            .groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter(|r| r.side == side)
            .count()
    };
    let p = &c.params.0;
    let failed = failure.is_some() && verdict.overall == OverallVerdict::NoResults;
    Ok(ComparisonPage {
        failure: failure.map(|f| FailureLine {
            line: f.words.line,
            evidence: f.words.evidence,
            job_id: f.job_id,
        }),
        summary,
        patch,
        title: if c.kind == ComparisonKind::Aa {
            format!("{}: {} against itself", named.name.text, named.base)
        } else {
            match (&step_of, &probe_of) {
                (Some(s), _) => steps::step_line(s),
                // A probe measures its last commit, on top of those before.
                (None, Some((_, probe))) => {
                    let last = messages.iter().rev().find(|m| m.has_diff);
                    let title = last.map(|m| mbox::Subject::parse(&m.subject).title);
                    format!(
                        "{probe}: “{}” against the good end",
                        title.unwrap_or_default()
                    )
                }
                (None, None) => named.name.text.clone(),
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
        // An A/A measures the noise: it has no verdict to wait for.
        overall: match c.kind {
            ComparisonKind::Aa => (
                "calibration",
                c.status.as_str().to_string(),
                "calibration".into(),
            ),
            // Nothing measured: its verdict is the failure said above.
            ComparisonKind::Ab if failed => ("verdict", "failed".into(), "failed".into()),
            ComparisonKind::Ab => (
                "verdict",
                view::overall_words(
                    verdict.overall,
                    built
                        .groups
                        .iter()
                        .filter_map(|g| g.comparison.headline_metric())
                        .any(|m| m.real_below_delta),
                ),
                view::overall_class(verdict.overall),
            ),
        },
        status: c.status.as_str(),
        base: named.base,
        subjects,
        series_sha256,
        machine: c.machine_name.clone(),
        machine_description: groups_description(&built.groups),
        workloads: c.asked.workloads.join(", "),
        params: format!(
            "mode {}, nr_task {}, {}{}{}",
            p.mode.as_str(),
            p.nr_task
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if run_length_pending {
                // What is stored meanwhile is a wall-clock length, not yet
                // what will be measured.
                "the run length of the mode the claiming machine measures in (1 s after 1 s \
                 of warm-up under tcg-icount, 5 s after 2 s otherwise)"
                    .to_string()
            } else {
                format!(
                    "{} s measured after {} s warm-up",
                    p.seconds, p.warmup_seconds
                )
            },
            if p.perf_stat { ", perf stat" } else { "" },
            if p.perf_profile { ", perf profile" } else { "" },
        ),
        runs_per_side: c.runs_per_side,
        more_runs: more_runs_text(c),
        waiting,
        progress,
        pruned: pruned_at.map(|at| at.format("%Y-%m-%d").to_string()),
        stored_base: stored(Side::Base),
        stored_patched: stored(Side::Patched),
        expected_per_side,
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
        built_over: c
            .built_over
            .as_deref()
            .zip(carried_commits)
            .map(|(over, n)| (view::short_commit(over).to_string(), n)),
        commit: c
            .commit_sha
            .as_deref()
            .map(|sha| view::short_commit(sha).to_string()),
        probe_of,
        tree,
        series_links,
        bisections,
    })
}

/// `247474 → 259832 ops/s per task`: metric `m`'s means, base then
/// patched, as the table prints them, with what they count.
fn absolute_values(m: &MetricComparison) -> Option<String> {
    let (base, patched) = (m.base.mean?, m.patched.mean?);
    let unit = metric::unit(&m.name);
    Some(format!(
        "{} → {}{}{unit}",
        format::mean_column(base).trim(),
        format::mean_column(patched).trim(),
        if unit.is_empty() { "" } else { " " }
    ))
}

fn groups_description(groups: &[GroupReport]) -> Option<String> {
    groups
        .first()
        .and_then(|g| g.comparison.header.machine_description.clone())
}

/// What the runs line says about boots added while undecided.
fn more_runs_text(c: &ComparisonRow) -> String {
    let Some(max) = c.asked.max_runs else {
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
