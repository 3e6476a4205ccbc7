//! `/`: recent comparisons with their verdicts, regressions first, filtered
//! by machine, workload and status.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use serde::Deserialize;

use super::view;
use crate::db::comparisons::{ListFilter, status};
use crate::error::Result;
use crate::extract::Query;
use crate::report::verdict::verdict_view;
use crate::{AppState, Error, db, report};

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
    overall: &'static str,
    overall_class: String,
    headline: String,
    subject: String,
    workloads: String,
    machine: Option<String>,
    status: String,
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
fn rank(overall: &str) -> u8 {
    match overall {
        "regression" => 0,
        "undecided" => 1,
        "improvement" => 2,
        "no change" => 3,
        _ => 4,
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Query(q): Query<DashboardQuery>,
) -> Result<DashboardPage> {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let (machine, workload, wanted_status) = (some(&q.machine), some(&q.workload), some(&q.status));
    if let Some(s) = &wanted_status {
        if !status::ALL.contains(&s.as_str()) {
            return Err(Error::BadRequest(format!(
                "status `{s}` is not one of {}",
                status::ALL.join(", ")
            )));
        }
    }
    let listed = db::comparisons::list(
        &state.db,
        &ListFilter {
            status: wanted_status.as_deref(),
            machine: machine.as_deref(),
            workload: workload.as_deref(),
            before: None,
            limit: SHOWN,
        },
    )
    .await?;
    let mut rows = Vec::with_capacity(listed.len());
    for s in listed {
        let Some(c) = db::comparisons::find(&state.db, s.id).await? else {
            continue;
        };
        let built = report::load(&state, &c).await?;
        let verdict = verdict_view(&built, String::new());
        let headline = built
            .groups
            .iter()
            .filter_map(|g| {
                g.comparison.headline_metric().map(|m| {
                    format!(
                        "{} nr_task {}: {} {}",
                        g.comparison.header.workload,
                        g.comparison.header.nr_task,
                        view::change_text(m),
                        m.verdict.as_str()
                    )
                })
            })
            .collect::<Vec<_>>()
            .join("; ");
        rows.push(Row {
            id: s.id,
            overall: verdict.overall,
            overall_class: verdict.overall.replace(' ', "-"),
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
        statuses: choices(status::ALL.iter().copied(), &q.status),
    })
}
