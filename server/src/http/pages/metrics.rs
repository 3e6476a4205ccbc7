//! `/comparisons/{id}/metrics`: every metric of a comparison's report, one
//! table per (workload, mode, nr_task), the worst first, filtered by a part of the metric's
//! name and sorted by a column on the server (no script needed), and the
//! same rows as CSV (`metrics.csv`) with unrounded numbers for a
//! spreadsheet or pandas. The comparison page keeps the rows a reader acts
//! on and links here, so it no longer carries hundreds of rows nobody
//! asked for.

use std::cmp::Ordering;
use std::fmt::Write as _;

use askama::Template;
use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use patchperf_common::metric;
use patchperf_common::report::MetricComparison;
use patchperf_common::stats::{ChangeUnit, Interval, sort_worst_first};
use serde::Deserialize;

use super::comparison::{RowView, row_view};
use crate::domain::report::{self, GroupReport};
use crate::error::Result;
use crate::http::extract::{Path, Query};
use crate::{AppState, Error};

/// How the rows can be ordered: `(value, what the page calls it)`.
const SORTS: [(&str, &str); 4] = [
    ("name", "metric name"),
    ("change", "largest change first"),
    ("verdict", "worst first"),
    ("q", "smallest q first"),
];

/// Query of the page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsQuery {
    /// Only metrics whose name holds this (any case).
    #[serde(default)]
    filter: String,
    /// One of [`SORTS`]; the report's order when empty.
    #[serde(default)]
    sort: String,
}

/// One `<option>` of the sort.
#[derive(Debug)]
pub struct SortChoice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

/// One (workload, mode, nr_task) table.
#[derive(Debug)]
pub struct MetricsGroup {
    title: String,
    /// `95%`, more while boots are added.
    interval_label: String,
    total: usize,
    rows: Vec<RowView>,
}

#[derive(Debug, Template)]
#[template(path = "metrics.html")]
pub(super) struct MetricsPage {
    id: i64,
    /// The CSV of the rows shown.
    csv_url: String,
    filter: String,
    sorts: Vec<SortChoice>,
    groups: Vec<MetricsGroup>,
}

/// The comparison's report, or a 404.
pub(super) async fn report_of(
    state: &AppState,
    id: i64,
) -> Result<std::sync::Arc<report::ComparisonReport>> {
    Ok(crate::domain::comparison::overview::find(state, id)
        .await?
        .1)
}

/// `a` against `b` with a missing or non-finite value last.
fn present_first(a: Option<f64>, b: Option<f64>, order: impl Fn(f64, f64) -> Ordering) -> Ordering {
    match (a.filter(|v| v.is_finite()), b.filter(|v| v.is_finite())) {
        (Some(a), Some(b)) => order(a, b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The metrics of `g` whose name holds `filter`, in the order `sort` asks.
fn selected<'a>(g: &'a GroupReport, filter: &str, sort: &str) -> Vec<&'a MetricComparison> {
    let filter = filter.to_lowercase();
    let mut rows: Vec<&MetricComparison> = g
        .comparison
        .metrics
        .iter()
        .filter(|m| m.name.to_lowercase().contains(&filter))
        .collect();
    match sort {
        "name" => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        "change" => rows
            .sort_by(|a, b| present_first(a.change, b.change, |x, y| y.abs().total_cmp(&x.abs()))),
        "verdict" => sort_worst_first(&mut rows, |m| m.outcome()),
        "q" => rows.sort_by(|a, b| present_first(a.q, b.q, |x, y| x.total_cmp(&y))),
        _ => {}
    }
    rows
}

/// The filter and sort asked for, checked: a 400 names the sorts there are.
fn checked(q: &MetricsQuery) -> Result<(String, &'static str)> {
    let filter = crate::http::listing::search_term(Some(&q.filter))?
        .unwrap_or_default()
        .to_string();
    if q.sort.is_empty() {
        return Ok((filter, ""));
    }
    let Some((sort, _)) = SORTS.iter().find(|(v, _)| *v == q.sort) else {
        return Err(Error::Malformed(format!(
            "sort {:?}: one of {}",
            q.sort,
            SORTS.map(|(v, _)| v).join(", ")
        )));
    };
    Ok((filter, sort))
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<MetricsQuery>,
) -> Result<Html<String>> {
    let (filter, sort) = checked(&q)?;
    let built = report_of(&state, id).await?;
    // The tables worst first, as the comparison page has them.
    let groups = built
        .worst_first()
        .into_iter()
        .map(|g| MetricsGroup {
            title: g.comparison.header.title(),
            interval_label: g.comparison.policy.interval_label(),
            total: g.comparison.metrics.len(),
            rows: selected(g, &filter, sort)
                .into_iter()
                .map(row_view)
                .collect(),
        })
        .collect();
    let mut csv_url = format!("/comparisons/{id}/metrics.csv");
    if !filter.is_empty() {
        csv_url.push_str(&format!("?filter={}", super::view::url_encode(&filter)));
    }
    let page = MetricsPage {
        id,
        csv_url,
        filter,
        sorts: SORTS
            .iter()
            .map(|&(value, label)| SortChoice {
                value,
                label,
                selected: value == sort,
            })
            .collect(),
        groups,
    };
    let html = page
        .render()
        .map_err(|e| Error::Internal(format!("rendering the metrics of comparison {id}: {e}")))?;
    Ok(Html(html))
}

pub(super) async fn csv(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<MetricsQuery>,
) -> Result<impl IntoResponse> {
    let (filter, sort) = checked(&q)?;
    let built = report_of(&state, id).await?;
    let mut out = String::from(
        "workload,mode,nr_task,metric,unit,base_mean,base_runs,patched_mean,patched_runs,\
         change,change_unit,low,high,welch_p,q,verdict,reason\n",
    );
    for g in built.worst_first() {
        let h = &g.comparison.header;
        for m in selected(g, &filter, sort) {
            let (low, high) = match m.interval {
                Some(Interval::Bounded { low, high }) => (Some(low), Some(high)),
                _ => (None, None),
            };
            let fields = [
                text_field(&h.workload),
                h.mode.as_str().to_string(),
                h.nr_task.to_string(),
                text_field(&m.name),
                text_field(metric::unit(&m.name)),
                number(m.base.mean),
                m.base.values.len().to_string(),
                number(m.patched.mean),
                m.patched.values.len().to_string(),
                number(m.change),
                match m.unit {
                    ChangeUnit::Percent => "percent",
                    ChangeUnit::Points => "points",
                }
                .to_string(),
                number(low),
                number(high),
                number(m.welch.map(|w| w.p)),
                number(m.q),
                m.verdict.as_str().to_string(),
                text_field(&m.reason),
            ];
            let _ = writeln!(out, "{}", fields.join(","));
        }
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"comparison-{id}-metrics.csv\""),
            ),
        ],
        out,
    ))
}

/// A number as CSV wants it: shortest exact form, empty when missing.
fn number(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// Text as one CSV field (RFC 4180 quoting). A field a spreadsheet would
/// take for a formula (`=`, `+`, `-`, `@`, tab or CR first: metric names
/// and reasons come from uploads) starts with a `'`.
fn text_field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_never_formulas() {
        assert_eq!(text_field("perf-stat.ps.cycles"), "perf-stat.ps.cycles");
        assert_eq!(text_field("a,b"), "\"a,b\"");
        assert_eq!(text_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(text_field("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(text_field("-1+2,3"), "\"'-1+2,3\"");
        assert_eq!(number(Some(f64::NAN)), "");
        assert_eq!(number(Some(0.1)), "0.1");
        assert_eq!(number(None), "");
    }

    #[test]
    fn missing_values_sort_last() {
        let mut v = [None, Some(1.0), Some(f64::NAN), Some(-3.0)];
        v.sort_by(|a, b| present_first(*a, *b, |x, y| y.abs().total_cmp(&x.abs())));
        assert_eq!(v[..2], [Some(-3.0), Some(1.0)]);
    }
}
