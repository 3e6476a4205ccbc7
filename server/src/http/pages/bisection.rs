//! `/bisections/{id}`: one bisection as people read it, answer first (the
//! outcome in 0-day's words, or how far the search has come), then what
//! was bisected, the probes in the order they were made with their verdicts
//! on the metric and where the first bad commit lay after each, and the
//! series with the probed commits marked. Everything but which kernels the
//! probes built comes from [`bisection::view`], the API's answer.

use std::collections::{BTreeMap, HashMap};

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::api::{BisectionStatus, BisectionView, ProbeView};
use patchperf_common::bisect::{self as search, Judgement};
use patchperf_common::report::format::change_column;
use patchperf_common::stats::ChangeUnit;
use patchperf_common::stats::interval::ends_text;

use super::view;
use crate::AppState;
use crate::domain::bisection;
use crate::domain::jobs::kernel_builds::{self, KernelBuilds, Origin};
use crate::error::Result;
use crate::http::extract::Path;

/// One probe, in the order made.
#[derive(Debug)]
pub struct ProbeLine {
    /// `4/7`: the commit's place in the series.
    position: String,
    href: String,
    commit: String,
    subject: String,
    status: &'static str,
    failure: Option<String>,
    verdict: String,
    verdict_class: &'static str,
    change: String,
    interval: String,
    judgement: String,
    /// Where the first bad commit lay once this probe was judged.
    bounds: String,
    runs_per_side: i32,
    kernels: String,
}

/// One commit of the series.
#[derive(Debug)]
pub struct CommitLine {
    position: u32,
    commit: String,
    subject: String,
    /// The probe of this commit: its page and what it said.
    probed: Option<(String, String)>,
    /// The answer names it.
    answer: bool,
    /// Its author, `Name <email>`.
    author: String,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "bisection.html")]
pub(super) struct BisectionPage {
    id: i64,
    status: &'static str,
    /// Still probing: the page reloads itself (no script).
    running: bool,
    /// The outcome in 0-day's words, or where the search stands.
    answer: String,
    /// The first bad commit's author, once found.
    culprit_author: Option<String>,
    base: String,
    range: Option<String>,
    comparison: Option<i64>,
    what: String,
    metric: String,
    runs: String,
    machine: Option<String>,
    submitted: String,
    finished: Option<String>,
    json_url: String,
    probes: Vec<ProbeLine>,
    commits: Vec<CommitLine>,
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<BisectionPage> {
    let v = bisection::find(&state, id).await?;
    let ids: Vec<i64> = v.probes.iter().map(|p| p.comparison_id).collect();
    let kernels = kernel_builds::of_comparisons(&state.db, &ids).await?;
    Ok(page_of(&v, &kernels))
}

fn page_of(v: &BisectionView, kernels: &HashMap<i64, KernelBuilds>) -> BisectionPage {
    let n = v.commits.len();
    let unit = ChangeUnit::for_metric(&v.metric);
    // Where the first bad commit lay after each probe, as the search saw
    // it: the judgements so far.
    let mut judged = BTreeMap::new();
    let probes = v
        .probes
        .iter()
        .map(|p| {
            let bounds = match p.judgement {
                Some(j) => {
                    judged.insert(p.position as usize, j);
                    bounds_text(search::bounds(n, &judged))
                }
                None => String::new(),
            };
            probe_line(p, n, unit, bounds, kernels.get(&p.comparison_id))
        })
        .collect();
    let answered: Vec<u32> = v
        .outcome
        .as_ref()
        .map(|o| {
            o.first_bad
                .into_iter()
                .chain(o.candidates.clone())
                .collect()
        })
        .unwrap_or_default();
    let commits = v
        .commits
        .iter()
        .map(|c| CommitLine {
            position: c.position,
            commit: c
                .commit
                .as_deref()
                .map(view::short_commit)
                .unwrap_or_default()
                .to_string(),
            subject: c.subject.clone(),
            probed: v
                .probes
                .iter()
                .rev()
                .find(|p| p.position == c.position)
                .map(|p| {
                    (
                        format!("/comparisons/{}", p.comparison_id),
                        p.judgement
                            .map(judgement_text)
                            .unwrap_or(p.status.as_str())
                            .to_string(),
                    )
                }),
            answer: answered.contains(&c.position),
            author: c.author.clone(),
        })
        .collect();
    BisectionPage {
        id: v.id,
        status: v.status.as_str(),
        running: v.status == BisectionStatus::Running,
        answer: answer(v),
        culprit_author: v
            .outcome
            .as_ref()
            .and_then(|o| o.first_bad)
            .and_then(|k| v.commits.iter().find(|c| c.position == k))
            .map(|c| c.author.clone())
            .filter(|a| !a.is_empty()),
        base: v.base.describe(),
        range: v.git_range.as_deref().map(view::short_range),
        comparison: v.comparison_id,
        what: format!(
            "{} ({}, nr_task {})",
            v.workload,
            v.mode.as_str(),
            v.nr_task
        ),
        metric: v.metric.clone(),
        runs: format!(
            "{} boots a side, up to {} while a probe's verdict is undecided",
            v.runs_per_side, v.max_runs_per_side
        ),
        machine: v.machine.clone(),
        submitted: format!("{} by {}", view::time(v.created_at), v.submitted_by),
        finished: v.finished_at.map(view::time),
        json_url: format!("/api/v1/bisections/{}", v.id),
        probes,
        commits,
    }
}

fn probe_line(
    p: &ProbeView,
    n: usize,
    unit: ChangeUnit,
    bounds: String,
    kernels: Option<&KernelBuilds>,
) -> ProbeLine {
    let points = unit == ChangeUnit::Points;
    ProbeLine {
        position: format!("{}/{n}", p.position),
        href: format!("/comparisons/{}", p.comparison_id),
        commit: p
            .commit
            .commit
            .as_deref()
            .map(view::short_commit)
            .unwrap_or_default()
            .to_string(),
        subject: p.commit.subject.clone(),
        status: p.status.as_str(),
        failure: p.failure.clone(),
        verdict: p
            .verdict
            .map(|v| format!("{} {}", view::verdict_letter(v), v.as_str()))
            .unwrap_or_default(),
        verdict_class: p.verdict.map_or("undecided", view::verdict_class),
        change: p
            .change
            .map(|c| change_column(c, points).trim().to_string())
            .unwrap_or_default(),
        interval: match (p.low, p.high) {
            (Some(low), Some(high)) => {
                let unit = unit.suffix();
                let (low, high) = ends_text(low, high, 2);
                format!("{low}{unit} … {high}{unit}")
            }
            _ => String::new(),
        },
        judgement: match p.judgement {
            Some(j) if p.by_estimate => format!("{} by estimate", judgement_text(j)),
            Some(j) => judgement_text(j).to_string(),
            None => String::new(),
        },
        bounds,
        runs_per_side: p.runs_per_side,
        kernels: match kernels {
            Some(k) => kernels_text(k),
            None if p.status.is_final() => "not reported".into(),
            None => "not yet".into(),
        },
    }
}

fn judgement_text(j: Judgement) -> &'static str {
    match j {
        Judgement::Good => "good",
        Judgement::Bad => "bad",
        Judgement::Skip => "skip",
    }
}

/// `5..7`: the commits the first bad one may be, once a probe was judged.
fn bounds_text((good, bad): (usize, usize)) -> String {
    if bad == good + 1 {
        bad.to_string()
    } else {
        format!("{}..{bad}", good + 1)
    }
}

/// A probe's kernels: `commit built, good end from the cache` (the base
/// side of a probe is the good end, its patched side the commit).
fn kernels_text(k: &KernelBuilds) -> String {
    let sides = [("good end", k.base), ("commit", k.patched)];
    let of = |origin: Origin| {
        let names: Vec<&str> = sides
            .iter()
            .filter(|(_, o)| *o == Some(origin))
            .map(|(name, _)| *name)
            .collect();
        (!names.is_empty()).then(|| names.join(" and "))
    };
    [
        of(Origin::Built).map(|s| format!("{s} built")),
        of(Origin::Cached).map(|s| format!("{s} from the cache")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// The answer, or where a search without one stands: `running: probe 2 of
/// about 4: commit 4/7 [0123456789] fs: step 4 (queued)`.
fn answer(v: &BisectionView) -> String {
    if let Some(o) = &v.outcome {
        return o.summary.clone();
    }
    let n = v.commits.len();
    let made = v.probes.len();
    match (v.status, v.probes.last()) {
        (BisectionStatus::Running, Some(current)) => {
            let judged: BTreeMap<usize, Judgement> = v
                .probes
                .iter()
                .filter_map(|p| Some((p.position as usize, p.judgement?)))
                .collect();
            let settled = v.probes.iter().filter(|p| p.status.is_final()).count();
            // Until the bad end is measured (when no comparison did), no
            // probe is judged.
            let end_pending = v.comparison_id.is_none()
                && !v
                    .probes
                    .iter()
                    .any(|p| p.position as usize == n && p.status.is_final());
            let about = settled + usize::from(end_pending) + search::probes_left(n, &judged);
            let commit = match &current.commit.commit {
                Some(sha) => format!("[{}] ", view::short_commit(sha)),
                None => String::new(),
            };
            format!(
                "running: probe {made} of about {}: commit {}/{n} {commit}{} ({})",
                about.max(made),
                current.position,
                current.commit.subject,
                current.status.as_str()
            )
        }
        (BisectionStatus::Running, None) => "running: its first probe is being made".into(),
        (status, _) => format!("{} after {made} probes", status.as_str()),
    }
}
