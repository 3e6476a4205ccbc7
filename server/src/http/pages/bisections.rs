//! `/bisections`: every bisection, newest first, a page at a time, each
//! row with its status, what it bisects and from where, its probes and
//! its answer's first line; the dashboard shows the newest few of the
//! same rows.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use serde::Deserialize;

use super::view;
use crate::AppState;
use crate::domain::bisection::BisectionSummary;
use crate::error::Result;
use crate::http::extract::Query;

/// How many bisections a page shows.
const SHOWN: i64 = 30;

/// One bisection in a list.
#[derive(Debug)]
pub struct BisectionRow {
    pub(super) id: i64,
    pub(super) status: &'static str,
    /// `will-it-scale.per_process_ops of open1`.
    pub(super) what: String,
    /// The range with short ids, or the comparison it started from.
    pub(super) of: String,
    pub(super) of_href: Option<String>,
    pub(super) probes: i64,
    /// The outcome's first line.
    pub(super) outcome: String,
}

impl From<BisectionSummary> for BisectionRow {
    fn from(b: BisectionSummary) -> Self {
        let (of, of_href) = match (&b.git_range, b.comparison_id) {
            (_, Some(c)) => (format!("comparison {c}"), Some(format!("/comparisons/{c}"))),
            (Some(r), None) => (view::short_range(r), None),
            (None, None) => (String::new(), None),
        };
        BisectionRow {
            id: b.id,
            status: b.status.as_str(),
            what: format!("{} of {}", b.metric, b.workload),
            of,
            of_href,
            probes: b.probes,
            outcome: b
                .outcome
                .and_then(|o| o.0.summary.lines().next().map(str::to_string))
                .unwrap_or_default(),
        }
    }
}

/// Query of `/bisections`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BisectionsQuery {
    /// Bisections with a smaller id only (the "older" link).
    #[serde(default)]
    before: Option<i64>,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "bisections.html")]
pub(super) struct BisectionsPage {
    bisections: Vec<BisectionRow>,
    /// Whether this is a later page (then the first is linked).
    later: bool,
    /// The next page, when there are older bisections.
    older: Option<String>,
}

pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<BisectionsQuery>,
) -> Result<BisectionsPage> {
    let mut found = crate::domain::bisection::list(&state, q.before, SHOWN + 1).await?;
    let more = found.len() > SHOWN as usize;
    found.truncate(SHOWN as usize);
    let older = more
        .then(|| found.last().map(|b| format!("/bisections?before={}", b.id)))
        .flatten();
    Ok(BisectionsPage {
        bisections: found.into_iter().map(BisectionRow::from).collect(),
        later: q.before.is_some(),
        older,
    })
}
