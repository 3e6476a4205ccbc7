//! `/`: the open change points of tracked trees (paged by id, newest
//! first, each page worst first, each with the form that marks it), the
//! comparisons with their verdicts (newest page first with its regressions first, oldest first or
//! worst verdict first), filtered by machine, workload, status and verdict
//! and searched, and the recent bisections with their answers. It reads stored state only and builds no report: finished
//! comparisons show their stored verdict (`report::stored`), queued and
//! running ones how far they have come (`listing::progress`), since a verdict of
//! half the boots is no verdict and judging thirty comparisons a request is
//! what made the page slow; a bisection shows its stored outcome.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use patchperf_common::report::importance::HeadlineColumns;
use patchperf_common::run::TaskMode;
use serde::Deserialize;

use super::bisections::BisectionRow;
use super::changes::ChangeView;
use super::view;
use crate::AppState;
use crate::domain::comparison::listing;
use crate::domain::comparison::listing::Progress;
use crate::domain::comparison::listing::{ComparisonSummary, ListFilter, ListOrder};
use crate::domain::tree::triage;
use crate::domain::tree::triage::ChangeFilter;
use crate::error::{Error, Result};
use crate::http::extract::Query;
use crate::http::listing::{ComparisonQuery, comparison_filter};

/// How many comparisons a page of the dashboard shows.
const SHOWN: i64 = 30;

/// The last page of comparisons a number reaches (30,000 comparisons
/// back); a filter reaches older ones.
const MAX_PAGE: i64 = 1000;

/// How many bisections the dashboard shows.
const BISECTIONS_SHOWN: i64 = 10;

/// How many open change points a page of the dashboard shows.
const CHANGES_SHOWN: i64 = 20;

/// Query of `/`; empty values mean any.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardQuery {
    /// Machine name.
    #[serde(default)]
    pub machine: String,
    /// Workload name.
    #[serde(default)]
    pub workload: String,
    /// Comparison status.
    #[serde(default)]
    pub status: String,
    /// Overall verdict.
    #[serde(default)]
    pub verdict: String,
    /// A word of a patch's subject or author, or its Message-Id.
    #[serde(default)]
    pub q: String,
    /// Open change points with a smaller id only (the "older" link).
    #[serde(default)]
    pub changes_before: Option<i64>,
    /// Page of the comparisons, from 1 (the first [`SHOWN`] in the order).
    #[serde(default)]
    pub page: Option<i64>,
    /// `newest` (the default: regressions first within each page),
    /// `oldest` or `verdict` (worst first over every page).
    #[serde(default)]
    pub sort: String,
}

/// One `<option>` of a filter.
#[derive(Debug)]
pub struct Choice {
    value: String,
    selected: bool,
}

/// One comparison in the list.
#[derive(Debug)]
pub struct Row {
    id: i64,
    /// The stored verdict, or the status of one not finished.
    shown: String,
    shown_class: String,
    /// Where it ranks: with its verdict, or among the undecided while it
    /// runs.
    rank: usize,
    /// Its headline change's size, which orders a rank's rows (larger
    /// first).
    size: Option<f64>,
    /// Headline metrics of a finished one, progress of a running one.
    headline: String,
    /// A finished one's most important report in columns, when stored
    /// (the headline is then its cells' tooltip).
    cells: Option<Cells>,
    /// What it is called ([`patchperf_common::naming`]).
    name: String,
    workloads: String,
    machine: Option<String>,
    status: ComparisonStatus,
    runs_per_side: i32,
    created: String,
}

/// A finished comparison's most important report, in the dashboard's
/// columns.
#[derive(Debug)]
pub struct Cells {
    /// `open1 · nr_task 8`, with `· thread` for threads.
    report: String,
    /// `and 5 more reports`.
    more: Option<String>,
    /// `-11.3%`.
    change: String,
    /// `real, below δ`: a real change that counts as none.
    change_note: Option<&'static str>,
    /// `-12.02% … -10.51%`.
    interval: String,
    /// `patch 2/3 “fs: …”`: the step that moved it.
    moved_by: Option<String>,
}

impl From<&HeadlineColumns> for Cells {
    fn from(c: &HeadlineColumns) -> Self {
        let mode = match c.mode {
            TaskMode::Process => "",
            TaskMode::Thread => " · thread",
        };
        let others = c.reports.saturating_sub(1);
        Cells {
            report: format!("{} · nr_task {}{mode}", c.workload, c.nr_task),
            more: (others > 0).then(|| {
                format!(
                    "and {others} more report{}",
                    if others == 1 { "" } else { "s" }
                )
            }),
            change: c.change.clone(),
            change_note: c.below_delta.then_some("real, below δ"),
            interval: c.interval.clone(),
            moved_by: c.moved_by.clone(),
        }
    }
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "dashboard.html")]
pub(super) struct DashboardPage {
    /// Open change points, the worst first.
    changes: Vec<ChangeView>,
    /// The next page of them.
    older_changes: Option<String>,
    rows: Vec<Row>,
    /// Where the comparisons' page is, and the pages either side.
    pages: Pages,
    bisections: Vec<BisectionRow>,
    machines: Vec<Choice>,
    workloads: Vec<Choice>,
    statuses: Vec<Choice>,
    verdicts: Vec<Choice>,
    /// The search term asked for.
    search: String,
    sorts: Vec<SortChoice>,
}

/// One `<option>` of the order.
#[derive(Debug)]
pub struct SortChoice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

/// What the order menu says of each order.
fn sort_label(order: ListOrder) -> &'static str {
    match order {
        ListOrder::Newest => "newest (regressions first on each page)",
        ListOrder::Oldest => "oldest first",
        ListOrder::Verdict => "worst verdict first",
    }
}

/// A page of comparisons and its neighbours, with the filters kept.
#[derive(Debug)]
pub struct Pages {
    /// From 1.
    page: i64,
    /// The newer comparisons' page.
    newer: Option<String>,
    /// The older comparisons' page, when there are older ones.
    older: Option<String>,
}

fn choices<'a>(values: impl IntoIterator<Item = &'a str>, chosen: &str) -> Vec<Choice> {
    values
        .into_iter()
        .map(|v| Choice {
            value: v.to_string(),
            selected: v == chosen,
        })
        .collect()
}

/// Regressions first: they are what a maintainer must look at.
fn rank(overall: OverallVerdict) -> usize {
    OverallVerdict::ALL
        .iter()
        .position(|v| *v == overall)
        .unwrap_or(OverallVerdict::ALL.len())
}

/// What the dashboard says of a comparison not finished yet: `4/6 boots,
/// 12 runs, now booting`.
fn progress_text(p: &Progress) -> String {
    let mut text = format!("{}/{} boots, {} runs", p.booted, p.boots, p.runs);
    if let Some(state) = &p.active {
        text.push_str(&format!(", now {state}"));
    }
    text
}

/// The verdict cell, its class, rank and headline of a listed comparison.
/// A calibration has no verdict to rank by: it comes after the others; a
/// failure (a calibration's too) is said in words before whatever was
/// measured. The machine page's lists say the same.
pub(super) fn shown(
    s: &ComparisonSummary,
    progress: Option<&Progress>,
) -> (String, String, usize, String) {
    let unranked = OverallVerdict::ALL.len();
    match (s.verdict, &s.headline) {
        (Some(v), Some(h)) if s.failure.is_some() => {
            let failure = s.failure.clone().unwrap_or_default();
            let (shown, class) = match v {
                OverallVerdict::NoResults => ("failed".into(), "failed".into()),
                v => (v.as_str().to_string(), view::overall_class(v)),
            };
            let headline = if h.is_empty() {
                failure
            } else {
                format!("{failure}; {h}")
            };
            (shown, class, rank(v), headline)
        }
        (Some(_), Some(h)) if s.kind == ComparisonKind::Aa => (
            "calibration".into(),
            "calibration".into(),
            unranked,
            h.clone(),
        ),
        (Some(v), Some(h)) => (
            view::overall_words(
                v,
                s.headline_columns.as_ref().is_some_and(|c| c.below_delta),
            ),
            view::overall_class(v),
            rank(v),
            h.clone(),
        ),
        _ if s.kind == ComparisonKind::Aa => (
            s.status.as_str().to_string(),
            s.status.as_str().to_string(),
            unranked,
            s.failure
                .clone()
                .or_else(|| progress.map(progress_text))
                .unwrap_or_default(),
        ),
        _ => (
            s.status.as_str().to_string(),
            s.status.as_str().to_string(),
            rank(OverallVerdict::Undecided),
            s.failure
                .clone()
                .or_else(|| progress.map(progress_text))
                .unwrap_or_default(),
        ),
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Query(q): Query<DashboardQuery>,
) -> Result<DashboardPage> {
    let filter = comparison_filter(
        &ComparisonQuery {
            status: Some(&q.status),
            machine: Some(&q.machine),
            workload: Some(&q.workload),
            verdict: Some(&q.verdict),
            q: Some(&q.q),
            sort: Some(&q.sort),
        },
        ListOrder::ALL,
    )?;
    let order = filter.order;
    let page = q.page.unwrap_or(1);
    if !(1..=MAX_PAGE).contains(&page) {
        return Err(Error::Malformed(format!(
            "page {page}: pages of comparisons are 1 to {MAX_PAGE}; a filter reaches older ones"
        )));
    }
    let mut listed = listing::list(
        &state,
        &ListFilter {
            offset: (page - 1) * SHOWN,
            limit: SHOWN + 1,
            ..filter
        },
    )
    .await?;
    let more = listed.len() > SHOWN as usize;
    listed.truncate(SHOWN as usize);
    // The same filters on the pages either side.
    let page_href = |n: i64| {
        let mut query: Vec<String> = [
            ("q", &q.q),
            ("machine", &q.machine),
            ("workload", &q.workload),
            ("status", &q.status),
            ("verdict", &q.verdict),
            ("sort", &q.sort),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", view::url_encode(v)))
        .collect();
        if n > 1 {
            query.push(format!("page={n}"));
        }
        if query.is_empty() {
            "/".to_string()
        } else {
            format!("/?{}", query.join("&"))
        }
    };
    let pages = Pages {
        page,
        newer: (page > 1).then(|| page_href(page - 1)),
        older: (more && page < MAX_PAGE).then(|| page_href(page + 1)),
    };
    let unfinished: Vec<i64> = listed
        .iter()
        .filter(|s| s.verdict.is_none())
        .map(|s| s.id)
        .collect();
    let progress = listing::progress(&state, &unfinished).await?;
    let mut rows: Vec<Row> = listed
        .into_iter()
        .map(|s| {
            let (shown, shown_class, rank, headline) =
                shown(&s, progress.iter().find(|p| p.id == s.id));
            Row {
                id: s.id,
                shown,
                shown_class,
                rank,
                size: s.headline_columns.as_ref().and_then(|c| c.size),
                headline,
                // A failure or a calibration's noise floor is said in
                // words across the columns of a change.
                cells: s
                    .headline_columns
                    .as_ref()
                    .filter(|_| s.failure.is_none() && s.kind == ComparisonKind::Ab)
                    .map(Cells::from),
                name: s.name,
                workloads: s.workloads.join(", "),
                machine: s.machine,
                status: s.status,
                runs_per_side: s.runs_per_side,
                created: view::time(s.created_at),
            }
        })
        .collect();
    // The newest page puts what a maintainer must look at first; an order
    // asked for is kept as the database gave it.
    if order == ListOrder::Newest {
        rows.sort_by(|a, b| {
            let size = |r: &Row| r.size.unwrap_or(-1.0);
            a.rank
                .cmp(&b.rank)
                .then_with(|| size(b).total_cmp(&size(a)))
                .then_with(|| b.id.cmp(&a.id))
        });
    }
    let machine_names = crate::domain::machines::names(&state).await?;
    let bisections = crate::domain::bisection::list(&state, None, BISECTIONS_SHOWN)
        .await?
        .into_iter()
        .map(BisectionRow::from)
        .collect();
    let (changes, older_changes) = open_changes(&state, q.changes_before).await?;
    Ok(DashboardPage {
        changes,
        older_changes,
        rows,
        pages,
        bisections,
        machines: choices(machine_names.iter().map(String::as_str), &q.machine),
        workloads: choices(
            patchperf_common::workload::WORKLOADS.iter().map(|w| w.name),
            &q.workload,
        ),
        statuses: choices(ComparisonStatus::ALL.iter().map(|s| s.as_str()), &q.status),
        verdicts: choices(OverallVerdict::ALL.iter().map(|v| v.as_str()), &q.verdict),
        search: q.q.clone(),
        sorts: ListOrder::ALL
            .iter()
            .map(|o| SortChoice {
                value: o.as_str(),
                label: sort_label(*o),
                selected: *o == order,
            })
            .collect(),
    })
}

/// A page of open change points below id `before` (paged newest first),
/// the worst first, and the link to the next page when there is one.
async fn open_changes(
    state: &AppState,
    before: Option<i64>,
) -> Result<(Vec<ChangeView>, Option<String>)> {
    let mut page = triage::list(
        state,
        ChangeFilter {
            tree_id: None,
            state: Some(patchperf_common::api::ChangeState::Open),
            before,
            limit: CHANGES_SHOWN + 1,
        },
    )
    .await?;
    let more = page.len() > CHANGES_SHOWN as usize;
    page.truncate(CHANGES_SHOWN as usize);
    let older = more
        .then(|| page.last().map(|c| format!("/?changes_before={}", c.id)))
        .flatten();
    // Worst first, by tree and newest first among equals.
    page.sort_by(|a, b| {
        (&a.tree, std::cmp::Reverse(a.id)).cmp(&(&b.tree, std::cmp::Reverse(b.id)))
    });
    super::changes::worst_first(&mut page);
    Ok((page.into_iter().map(ChangeView::from).collect(), older))
}
