//! `/comparisons/{id}/plots/runs.svg` and `/comparisons/{id}/plots/series.svg`:
//! each plot of a report page on its own, as an SVG document, so a plot can
//! be opened, linked from a mail or a bug, and saved.

pub mod history;
pub mod per_second;
pub mod svg;

/// Values that have made plotting libraries loop, overflow or draw
/// nothing: every plot is tested with them (base side, patched side).
#[cfg(test)]
const EXTREME_VALUES: [(&[f64], &[f64]); 6] = [
    (&[0.0, 0.0, 0.0], &[1.7e308, 1.7e308, 1.7e308]),
    (&[-1e308], &[1e308]),
    (&[f64::MAX], &[f64::MIN]),
    (&[1e15, 1e15], &[1e15 + 0.125, 1e15]),
    (&[5e-324], &[1e-320]),
    (&[f64::NAN, 1.0], &[f64::INFINITY, 2.0]),
];

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use patchperf_common::metric;
use patchperf_common::report::ReportHeader;
use patchperf_common::run::Side;
use serde::Deserialize;

use crate::domain::comparison::overview;
use crate::domain::comparison::overview::PerSecondRow;
use crate::domain::report::offload::off_workers;
use crate::domain::report::{ComparisonReport, GroupReport};
use crate::error::Result;
use crate::http::extract::{Path, Query};
use crate::{AppState, Error};

/// Which report of a comparison (one workload, mode and nr_task) and, for
/// the per-run plot, which metric. Each is optional: the first report that
/// matches what is given is plotted, and the per-run plot shows its
/// headline metric unless told otherwise; a value that matches nothing is
/// answered with the values that would.
#[derive(Debug, Deserialize)]
pub(super) struct PlotQuery {
    #[serde(default)]
    workload: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    nr_task: Option<String>,
    #[serde(default)]
    metric: Option<String>,
}

impl PlotQuery {
    /// What a `kind` plot of report `g` (and `metric`) is kept as beside
    /// its report.
    fn kept_as(kind: &str, g: &GroupReport, metric: &str) -> String {
        let h = &g.comparison.header;
        format!(
            "{kind} {} {} {} {metric}",
            h.workload,
            h.mode.as_str(),
            h.nr_task
        )
    }

    /// The query string naming this plot (URL-encoded).
    pub(super) fn link(
        comparison_id: i64,
        kind: &str,
        g: &GroupReport,
        metric: Option<&str>,
    ) -> String {
        let h = &g.comparison.header;
        let mut url = format!(
            "/comparisons/{comparison_id}/plots/{kind}.svg?{}",
            report_query(h, &encode(&h.workload))
        );
        if let Some(m) = metric {
            url.push_str("&metric=");
            url.push_str(&encode(m));
        }
        url
    }
}

/// The query naming report `h` (`workload=open1&mode=process&nr_task=4`),
/// its workload written as `workload` (encoded in a link, as is in words).
fn report_query(h: &ReportHeader, workload: &str) -> String {
    format!(
        "workload={workload}&mode={}&nr_task={}",
        h.mode.as_str(),
        h.nr_task
    )
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub(super) fn encode(s: &str) -> String {
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
    let (_, built) = crate::domain::comparison::overview::find(state, id).await?;
    let matches = |g: &GroupReport| {
        let h = &g.comparison.header;
        q.workload.as_deref().is_none_or(|w| w == h.workload)
            && q.mode.as_deref().is_none_or(|m| m == h.mode.as_str())
            && q.nr_task
                .as_deref()
                .is_none_or(|n| n == h.nr_task.to_string())
    };
    let at = built.groups.iter().position(matches).ok_or_else(|| {
        let reports: Vec<String> = built
            .groups
            .iter()
            .map(|g| report_query(&g.comparison.header, &g.comparison.header.workload))
            .collect();
        if reports.is_empty() {
            Error::NotFound(format!("comparison {id} has no runs to plot yet"))
        } else {
            Error::NotFound(format!(
                "comparison {id} has no such report; it has: {}",
                reports.join(", ")
            ))
        }
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
) -> Result<Response> {
    let (report, at) = group(&state, id, &q).await?;
    let g = &report.groups[at];
    let m = match q.metric.as_deref() {
        Some(name) => g.comparison.metric(name).ok_or_else(|| {
            let mut names: Vec<&str> = g
                .comparison
                .metrics
                .iter()
                .map(|m| m.name.as_str())
                .collect();
            names.sort_unstable();
            Error::NotFound(format!(
                "this report has no metric `{name}`; it has: {}",
                names.join(", ")
            ))
        })?,
        None => g
            .comparison
            .headline_metric()
            .ok_or_else(|| Error::NotFound("this report has no metric to plot yet".into()))?,
    }
    .clone();
    let name = m.name.clone();
    let policy = g.comparison.policy;
    let kept_as = PlotQuery::kept_as("runs.svg", g, &name);
    let limit = state.config.report_time_limit;
    once(&state, id, &report, &kept_as, async move {
        off_workers(
            limit,
            &format!("the plot of `{name}` of comparison {id}"),
            move || svg::runs_plot(&m, &policy),
        )
        .await?
        .ok_or_else(|| Error::NotFound(format!("`{name}` has no values to plot")))
    })
    .await
}

/// The per-second will-it-scale series of every run of one report.
pub(super) async fn series(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<PlotQuery>,
) -> Result<Response> {
    let (report, at) = group(&state, id, &q).await?;
    let kept_as = PlotQuery::kept_as("series.svg", &report.groups[at], "");
    once(&state, id, &report, &kept_as, async {
        let g = &report.groups[at];
        let rows = overview::per_second(&state, id, &[series_name(g)]).await?;
        series_svg(&state, id, g, &rows)
            .await?
            .ok_or_else(|| Error::NotFound("these runs stored no per-second series".into()))
    })
    .await
}

/// The plot kept as `what` with this report, else `render`ed now and kept:
/// a report's plots change only with the report.
async fn once(
    state: &AppState,
    id: i64,
    report: &Arc<ComparisonReport>,
    what: &str,
    render: impl Future<Output = Result<String>>,
) -> Result<Response> {
    if let Some(kept) = state.reports.rendered(id, report, what) {
        return Ok(svg(kept.to_string()).into_response());
    }
    let body = render.await?;
    state.reports.keep_rendered(id, report, what, body.clone());
    Ok(svg(body).into_response())
}

/// The name of the per-second series a report's plot shows.
pub(super) fn series_name(g: &GroupReport) -> String {
    let h = &g.comparison.header;
    metric::wis_scaling(h.nr_task, h.mode)
}

/// The per-second series plot of a report's runs (total ops each second),
/// from `rows`, which may hold other reports' series too.
pub(super) async fn series_svg(
    state: &AppState,
    comparison_id: i64,
    g: &GroupReport,
    rows: &[PerSecondRow],
) -> Result<Option<String>> {
    let series_name = series_name(g);
    let series_runs: Vec<(Side, String, Vec<f64>)> = rows
        .iter()
        .filter(|s| s.name == series_name)
        .filter_map(|s| {
            let run = g.runs.iter().find(|r| r.id == s.run_id)?;
            Some((
                run.side,
                format!("boot {} {}", run.boot_seq, run.side.as_str()),
                s.points.clone(),
            ))
        })
        .collect();
    off_workers(
        state.config.report_time_limit,
        &format!("the per-second plot of comparison {comparison_id}"),
        move || per_second::series_plot(&series_name, &series_runs),
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
