//! `/trees`, `/trees/{id}` and `/trees/{id}/plots/history.svg`: the
//! tracked trees, and one tree's page: what it follows and measures, each
//! history as a plot (commits in tested order, each mean with its 95%
//! interval, change points marked) with the table of its points, and every
//! change point found in it with what people said of it. What moved comes
//! first: the histories with a change point, then the change points, then
//! the flat histories.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use patchperf_common::credentials::without_credentials;
use patchperf_common::report::format::mean_column;
use patchperf_common::run::TaskMode;

use super::changes::ChangeView;
use super::plot::encode;
use super::view;
use crate::domain::report::offload::off_workers;
use crate::domain::tree::history::HistoryRow;
use crate::domain::tree::history::{self, History};
use crate::domain::tree::triage::{ChangeFilter, ChangeRow};
use crate::domain::tree::{self, triage};
use crate::error::Result;
use crate::http::extract::{Path, Query};
use crate::http::pages::plot::history::{self as history_plot, HistoryPlot, PlotChange, PlotPoint};
use crate::{AppState, Error};
use patchperf_common::api::HistoryPoint;
use patchperf_common::api::HistoryQuery;

/// Most change points a tree page lists.
const CHANGES_SHOWN: i64 = 500;

/// A tree in the list.
#[derive(Debug)]
pub struct TreeItem {
    id: i64,
    name: String,
    branch: String,
    url: String,
    tested: String,
    tested_at: String,
    open: i64,
}

#[derive(Debug, askama::Template, askama_web::WebTemplate)]
#[template(path = "trees.html")]
pub(super) struct TreesPage {
    trees: Vec<TreeItem>,
}

/// The tracked trees, oldest first.
pub(super) async fn list(State(state): State<AppState>) -> Result<TreesPage> {
    let open = triage::open_counts(&state).await?;
    let mut trees = Vec::new();
    for t in tree::list(&state).await? {
        let id = t.id;
        trees.push(TreeItem {
            id,
            tested: view::short_commit(&t.tested_commit).to_string(),
            tested_at: t.tested_at.map(view::time).unwrap_or_default(),
            open: open.iter().find(|o| o.0 == id).map_or(0, |o| o.1),
            name: t.name,
            branch: t.branch,
            url: without_credentials(&t.url),
        });
    }
    Ok(TreesPage { trees })
}

/// One point of a history's table.
#[derive(Debug)]
pub struct PointItem {
    position: i32,
    commit: String,
    subject: String,
    author: String,
    date: String,
    /// `1000.00 ± 5.12`.
    mean: String,
    runs: usize,
    comparison_id: i64,
    /// The change point found at this commit, as its size.
    change: Option<String>,
}

/// One history: its plot and its points.
#[derive(Debug)]
pub struct HistorySection {
    title: String,
    /// The plot drawn for a wide screen, and for a phone's.
    svg: String,
    svg_narrow: String,
    svg_href: String,
    json_href: String,
    points: Vec<PointItem>,
}

#[derive(Debug, askama::Template, askama_web::WebTemplate)]
#[template(path = "tree.html")]
pub(super) struct TreePage {
    name: String,
    url: String,
    branch: String,
    workloads: String,
    params: String,
    runs: String,
    machine: String,
    schedule: String,
    cc: String,
    tested: String,
    /// What the last rewrite of the branch did ("" when none).
    rewritten: String,
    /// Why the last new head was not measured ("" when it was).
    not_measured: String,
    json_url: String,
    /// The histories with a change point, first on the page.
    changed: Vec<HistorySection>,
    /// The others, after the change points.
    flat: Vec<HistorySection>,
    changes: Vec<ChangeView>,
}

/// `open1 · process · nr_task 1 on lab-1 (tcg-icount)`.
fn history_title(s: &HistoryRow) -> String {
    format!(
        "{} of {} · {} · nr_task {} on {} ({})",
        s.metric, s.workload, s.mode, s.nr_task, s.machine, s.measurement
    )
}

/// Whether change point `c` was found in history `s`.
fn in_history(c: &ChangeRow, s: &HistoryRow) -> bool {
    c.workload == s.workload
        && c.mode == s.mode
        && c.nr_task == s.nr_task
        && c.metric == s.metric
        && c.machine == s.machine
        && c.measurement == s.measurement
}

/// The plot of history `s`'s `points` with its change points marked.
fn plot_of(
    s: &HistoryRow,
    points: &[HistoryPoint],
    changes: &[&ChangeRow],
    delta_percent: Option<f64>,
) -> HistoryPlot {
    HistoryPlot {
        delta_percent,
        width: history_plot::WIDE,
        title: history_title(s),
        y_label: history_plot::y_label(&s.metric),
        points: points
            .iter()
            .map(|p| PlotPoint {
                commit: view::short_commit(&p.commit).to_string(),
                date: p.committed_at.map(|t| t.format("%Y-%m-%d").to_string()),
                mean: p.mean,
                interval: p.low.zip(p.high),
                href: Some(format!("/comparisons/{}", p.comparison_id)),
                tip: format!(
                    "{} {}: {} (comparison {})",
                    view::short_commit(&p.commit),
                    p.subject,
                    mean_text(p),
                    p.comparison_id
                ),
            })
            .collect(),
        changes: changes
            .iter()
            .filter_map(|c| {
                Some(PlotChange {
                    at: points.iter().position(|p| p.position == c.position)?,
                    label: change_label(c),
                    verdict: c.verdict,
                })
            })
            .collect(),
    }
}

/// `improvement +50.0% [+48.1%, +51.9%]`.
fn change_label(c: &ChangeRow) -> String {
    format!(
        "{} {}",
        c.verdict,
        super::changes::size(c.change_percent, c.low, c.high)
    )
}

/// Every change point of the tree, newest first.
async fn tree_changes(state: &AppState, id: i64) -> Result<Vec<ChangeRow>> {
    let filter = ChangeFilter {
        tree_id: Some(id),
        state: None,
        before: None,
        limit: CHANGES_SHOWN,
    };
    triage::list(state, filter).await
}

/// Renders `plot` off the request workers (a long history is many marks).
async fn render(state: &AppState, plot: HistoryPlot) -> Result<String> {
    let what = format!("the plot of {}", plot.title);
    off_workers(state.config.report_time_limit, &what, move || {
        history_plot::history_plot(&plot)
    })
    .await?
    .ok_or_else(|| Error::NotFound("this history has no point to plot".into()))
}

/// `/trees/{id}/plots/history.svg?…` naming history `s`.
fn svg_href(id: i64, s: &HistoryRow) -> String {
    format!("/trees/{id}/plots/history.svg?{}", history_query(s))
}

/// `/api/v1/trees/{id}/history?…` naming history `s`: a tree with two
/// workloads or more has several histories, and the query must say which.
fn json_href(id: i64, s: &HistoryRow) -> String {
    format!("/api/v1/trees/{id}/history?{}", history_query(s))
}

/// The query naming history `s`, encoded.
fn history_query(s: &HistoryRow) -> String {
    format!(
        "workload={}&mode={}&nr_task={}&metric={}&machine={}&measurement={}",
        encode(&s.workload),
        encode(&s.mode),
        s.nr_task,
        encode(&s.metric),
        encode(&s.machine),
        encode(&s.measurement)
    )
}

/// `248101.8 ± 12.4`: a point's mean with half its 95% interval.
fn mean_text(p: &HistoryPoint) -> String {
    let mut mean = mean_column(p.mean).trim().to_string();
    if let (Some(l), Some(h)) = (p.low, p.high) {
        mean.push_str(&format!(" ± {}", mean_column((h - l) / 2.0).trim()));
    }
    mean
}

fn point_item(p: HistoryPoint, changes: &[&ChangeRow]) -> PointItem {
    let mean = mean_text(&p);
    PointItem {
        position: p.position,
        commit: view::short_commit(&p.commit).to_string(),
        change: changes
            .iter()
            .find(|c| c.position == p.position)
            .map(|c| change_label(c)),
        subject: p.subject,
        author: p.author,
        date: p.committed_at.map(view::time).unwrap_or_default(),
        mean,
        runs: p.runs.len(),
        comparison_id: p.comparison_id,
    }
}

/// A tree's page.
pub(super) async fn page(State(state): State<AppState>, Path(id): Path<i64>) -> Result<TreePage> {
    let t = tree::find(&state, id).await?;
    let changes = tree_changes(&state, id).await?;
    let (mut changed, mut flat) = (Vec::new(), Vec::new());
    for History { row: s, points } in history::of_tree(&state, id).await? {
        let here: Vec<&ChangeRow> = changes.iter().filter(|c| in_history(c, &s)).collect();
        let delta = history::delta_percent(&state, &s).await?;
        let plot = plot_of(&s, &points, &here, delta);
        let narrow = HistoryPlot {
            width: history_plot::NARROW,
            ..plot.clone()
        };
        let (svg, svg_narrow) = (render(&state, plot).await?, render(&state, narrow).await?);
        let into = if here.is_empty() {
            &mut flat
        } else {
            &mut changed
        };
        into.push(HistorySection {
            title: history_title(&s),
            svg,
            svg_narrow,
            svg_href: svg_href(id, &s),
            json_href: json_href(id, &s),
            points: points.into_iter().map(|p| point_item(p, &here)).collect(),
        });
    }
    let p = &t.params.0;
    let nr_task: Vec<String> = p.nr_task.iter().map(|n| n.to_string()).collect();
    let mode = match p.mode {
        TaskMode::Process => "process",
        TaskMode::Thread => "thread",
    };
    let mut params = format!(
        "{mode}, nr_task {}, {} s measured after {} s of warm-up",
        nr_task.join(" "),
        p.seconds,
        p.warmup_seconds
    );
    for (on, what) in [(p.perf_stat, "perf stat"), (p.perf_profile, "perf profile")] {
        if on {
            params.push_str(&format!(", {what}"));
        }
    }
    let runs = match t.asked.max_runs {
        Some(m) => format!(
            "{} boots a side, up to {m} while undecided",
            t.runs_per_side
        ),
        None => format!("{} boots a side", t.runs_per_side),
    };
    let schedule = if t.min_hours == 0 {
        "every new head (polled every few minutes, or at once by the push hook)".to_string()
    } else {
        format!("a new head at most every {} hours", t.min_hours)
    };
    Ok(TreePage {
        rewritten: t.rewrite_note.clone().unwrap_or_default(),
        not_measured: t.push_note.clone().unwrap_or_default(),
        name: t.name,
        url: without_credentials(&t.url),
        branch: t.branch,
        workloads: if t.asked.workloads.is_empty() {
            "each new head's, from the workload map: those that run the files its commits touch"
                .into()
        } else {
            t.asked.workloads.join(", ")
        },
        params,
        runs,
        machine: t.machine_name.unwrap_or_else(|| "any".into()),
        schedule,
        cc: if t.cc.is_empty() {
            "nobody".into()
        } else {
            t.cc.join(", ")
        },
        tested: match t.tested_at {
            Some(at) => format!(
                "{} at {}",
                view::short_commit(&t.tested_commit),
                view::time(at)
            ),
            None => format!(
                "{} (its head when added)",
                view::short_commit(&t.tested_commit)
            ),
        },
        json_url: format!("/api/v1/trees/{id}"),
        changed,
        flat,
        changes: {
            let mut changes = changes;
            super::changes::worst_first(&mut changes);
            changes.into_iter().map(ChangeView::from).collect()
        },
    })
}

/// One history's plot on its own, as an SVG document.
pub(super) async fn history_svg(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<HistoryQuery>,
) -> Result<impl IntoResponse> {
    let History { row: s, points } = history::named(&state, id, &q).await?;
    let changes = tree_changes(&state, id).await?;
    let here: Vec<&ChangeRow> = changes.iter().filter(|c| in_history(c, &s)).collect();
    let delta = history::delta_percent(&state, &s).await?;
    let svg = render(&state, plot_of(&s, &points, &here, delta)).await?;
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        svg,
    ))
}
