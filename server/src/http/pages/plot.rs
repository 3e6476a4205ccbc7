//! `/comparisons/{id}/plots/runs.svg` and `/comparisons/{id}/plots/series.svg`:
//! each plot of a report page on its own, as an SVG document, so a plot can
//! be opened, linked from a mail or a bug, and saved.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use patchperf_common::metric;
use patchperf_common::run::{Side, TaskMode};
use serde::Deserialize;

use crate::domain::report;
use crate::domain::report::offload::off_workers;
use crate::domain::report::{ComparisonReport, GroupReport, plots};
use crate::error::Result;
use crate::http::extract::{Path, Query};
use crate::{AppState, Error, db};

/// Which report of a comparison (one workload, mode and nr_task) and, for
/// the per-run plot, which metric.
#[derive(Debug, Deserialize)]
pub(super) struct PlotQuery {
    workload: String,
    mode: TaskMode,
    nr_task: u32,
    #[serde(default)]
    metric: Option<String>,
}

impl PlotQuery {
    /// The query string naming this plot (URL-encoded).
    pub(super) fn link(
        comparison_id: i64,
        kind: &str,
        g: &GroupReport,
        metric: Option<&str>,
    ) -> String {
        let h = &g.comparison.header;
        let mut url = format!(
            "/comparisons/{comparison_id}/plots/{kind}.svg?workload={}&mode={}&nr_task={}",
            encode(&h.workload),
            h.mode.as_str(),
            h.nr_task
        );
        if let Some(m) = metric {
            url.push_str("&metric=");
            url.push_str(&encode(m));
        }
        url
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The comparison's kept report and the position of the group `q` asks
/// for in it (not a copy: a large report's group holds thousands of values).
async fn group(state: &AppState, id: i64, q: &PlotQuery) -> Result<(Arc<ComparisonReport>, usize)> {
    let c = db::comparisons::find(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    let built = report::load_shared(state, &c).await?;
    let at = built
        .groups
        .iter()
        .position(|g| {
            let h = &g.comparison.header;
            h.workload == q.workload && h.mode == q.mode && h.nr_task == q.nr_task
        })
        .ok_or_else(|| {
            Error::NotFound(format!(
                "comparison {id} has no runs of {} ({}, nr_task {})",
                q.workload,
                q.mode.as_str(),
                q.nr_task
            ))
        })?;
    Ok((built, at))
}

fn svg(body: String) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        body,
    )
}

/// The per-run dots, means and interval of one metric.
pub(super) async fn runs(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<PlotQuery>,
) -> Result<impl IntoResponse> {
    let (report, at) = group(&state, id, &q).await?;
    let g = &report.groups[at];
    let name = q.metric.as_deref().ok_or_else(|| {
        Error::BadRequest("the `metric` parameter names the metric to plot".into())
    })?;
    let what = format!(
        "runs.svg {} {} {} {name}",
        q.workload,
        q.mode.as_str(),
        q.nr_task
    );
    if let Some(kept) = state.reports.rendered(id, &report, &what) {
        return Ok(svg(kept.to_string()));
    }
    let m = g
        .comparison
        .metric(name)
        .ok_or_else(|| Error::NotFound(format!("this report has no metric `{name}`")))?;
    let m = m.clone();
    let body = off_workers(
        state.config.report_time_limit,
        &format!("the plot of `{name}` of comparison {id}"),
        move || plots::runs_plot(&m),
    )
    .await?
    .ok_or_else(|| Error::NotFound(format!("`{name}` has no values to plot")))?;
    state
        .reports
        .keep_rendered(id, &report, &what, body.clone());
    Ok(svg(body))
}

/// The per-second will-it-scale series of every run of one report.
pub(super) async fn series(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<PlotQuery>,
) -> Result<impl IntoResponse> {
    let (report, at) = group(&state, id, &q).await?;
    let what = format!(
        "series.svg {} {} {}",
        q.workload,
        q.mode.as_str(),
        q.nr_task
    );
    if let Some(kept) = state.reports.rendered(id, &report, &what) {
        return Ok(svg(kept.to_string()));
    }
    let body = series_svg(&state, id, &report.groups[at])
        .await?
        .ok_or_else(|| Error::NotFound("these runs stored no per-second series".into()))?;
    state
        .reports
        .keep_rendered(id, &report, &what, body.clone());
    Ok(svg(body))
}

/// The per-second series plot of a report's runs: total ops each second.
pub(super) async fn series_svg(
    state: &AppState,
    comparison_id: i64,
    g: &GroupReport,
) -> Result<Option<String>> {
    let h = &g.comparison.header;
    let series_name = metric::wis_scaling(h.nr_task, h.mode);
    let series_rows = db::runs::series(&state.db, comparison_id, &series_name).await?;
    let series_runs: Vec<(Side, String, Vec<f64>)> = series_rows
        .into_iter()
        .filter_map(|s| {
            let run = g.runs.iter().find(|r| r.id == s.run_id)?;
            Some((
                run.side,
                format!("boot {} {}", run.boot_seq, run.side.as_str()),
                s.points,
            ))
        })
        .collect();
    off_workers(
        state.config.report_time_limit,
        &format!("the per-second plot of comparison {comparison_id}"),
        move || plots::series_plot(&series_name, &series_runs),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn metric_names_are_percent_encoded_for_the_query_string() {
        assert_eq!(
            encode("perf-stat.i.branch-miss-rate%"),
            "perf-stat.i.branch-miss-rate%25"
        );
        assert_eq!(encode("a b&c=d"), "a%20b%26c%3Dd");
        assert_eq!(
            encode("will-it-scale.per_process_ops"),
            "will-it-scale.per_process_ops"
        );
    }
}
