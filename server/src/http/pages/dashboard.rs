//! `/`: recent comparisons with their verdicts, regressions first, filtered
//! by machine, workload, status and verdict. Finished comparisons show
//! their stored verdict (`report::stored`); running ones are judged live.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use patchperf_common::comparison::{ComparisonStatus, OverallVerdict};
use serde::Deserialize;

use super::view;
use crate::db::comparisons::{ComparisonSummary, ListFilter};
use crate::domain::report;
use crate::domain::report::stored;
use crate::domain::report::verdict::verdict_view;
use crate::error::Result;
use crate::http::extract::Query;
use crate::http::one_of;
use crate::{AppState, db};

/// How many comparisons the dashboard shows.
const SHOWN: i64 = 30;

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
    overall: OverallVerdict,
    overall_class: String,
    headline: String,
    subject: String,
    workloads: String,
    machine: Option<String>,
    status: ComparisonStatus,
    runs_per_side: i32,
    created: String,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "dashboard.html")]
pub(super) struct DashboardPage {
    rows: Vec<Row>,
    machines: Vec<Choice>,
    workloads: Vec<Choice>,
    statuses: Vec<Choice>,
    verdicts: Vec<Choice>,
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

/// The verdict and headline of a listed comparison: stored once it is
/// final (see [`stored::fill`]), judged from the runs so far while it runs.
async fn judged(
    state: &AppState,
    s: &ComparisonSummary,
) -> Result<Option<(OverallVerdict, String)>> {
    if let (Some(v), Some(h)) = (s.verdict, &s.headline) {
        return Ok(Some((v, h.clone())));
    }
    let Some(c) = db::comparisons::find(&state.db, s.id).await? else {
        return Ok(None);
    };
    let built = report::load(state, &c).await?;
    let overall = verdict_view(&built, String::new()).overall;
    Ok(Some((overall, stored::headline(&built))))
}

pub(super) async fn page(
    State(state): State<AppState>,
    Query(q): Query<DashboardQuery>,
) -> Result<DashboardPage> {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let (machine, workload) = (some(&q.machine), some(&q.workload));
    let (wanted_status, wanted_verdict) = (some(&q.status), some(&q.verdict));
    let wanted_status = one_of(
        "status",
        wanted_status.as_deref(),
        ComparisonStatus::ALL,
        ComparisonStatus::as_str,
    )?;
    let wanted_verdict = one_of(
        "verdict",
        wanted_verdict.as_deref(),
        OverallVerdict::ALL,
        OverallVerdict::as_str,
    )?;
    if wanted_verdict.is_some() {
        stored::catch_up(&state).await?;
    }
    let mut listed = db::comparisons::list(
        &state.db,
        &ListFilter {
            status: wanted_status,
            machine: machine.as_deref(),
            workload: workload.as_deref(),
            verdict: wanted_verdict,
            before: None,
            limit: SHOWN,
        },
    )
    .await?;
    stored::fill(&state, &mut listed).await?;
    let mut rows = Vec::with_capacity(listed.len());
    for s in listed {
        let Some((overall, headline)) = judged(&state, &s).await? else {
            continue;
        };
        rows.push(Row {
            id: s.id,
            overall_class: view::overall_class(overall),
            overall,
            headline,
            subject: s.subject.unwrap_or_else(|| "(no subject)".into()),
            workloads: s.workloads.join(", "),
            machine: s.machine,
            status: s.status,
            runs_per_side: s.runs_per_side,
            created: view::time(s.created_at),
        });
    }
    rows.sort_by_key(|r| (rank(r.overall), std::cmp::Reverse(r.id)));
    let machine_names: Vec<String> = db::machines::list(&state.db)
        .await?
        .into_iter()
        .map(|m| m.name)
        .collect();
    Ok(DashboardPage {
        rows,
        machines: choices(machine_names.iter().map(String::as_str), &q.machine),
        workloads: choices(
            patchperf_common::workload::WORKLOADS.iter().map(|w| w.name),
            &q.workload,
        ),
        statuses: choices(ComparisonStatus::ALL.iter().map(|s| s.as_str()), &q.status),
        verdicts: choices(OverallVerdict::ALL.iter().map(|v| v.as_str()), &q.verdict),
    })
}
