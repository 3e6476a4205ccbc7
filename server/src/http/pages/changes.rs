//! Change points on pages: how a row reads and where it sorts (the
//! dashboard's open changes and a tree page's list, worst first), `/changes`, every tree's change points in one list
//! (newest first, by state, a page at a time), and `POST
//! /changes/{id}/acknowledge`, the form that marks one acknowledged or
//! expected without JavaScript. The form carries
//! an admin token typed by the person, so another site cannot post it for
//! them.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, State};
use axum::http::HeaderMap;
use axum::http::header::REFERER;
use axum::response::Redirect;
use patchperf_common::api::{ChangeState, ChangeVerdict};
use patchperf_common::stats::interval::ends_text;
use patchperf_common::stats::{Outcome, Verdict, sort_worst_first};
use serde::Deserialize;

use super::view;
use crate::domain::tree::triage;
use crate::domain::tree::triage::{ChangeFilter, ChangeRow};
use crate::error::Result;
use crate::http::auth::Caller;
use crate::http::extract::{Path, Query};
use crate::{AppState, Error};

/// A change point as a page lists it.
#[derive(Debug)]
pub struct ChangeView {
    pub(super) id: i64,
    pub(super) tree_id: i64,
    pub(super) tree: String,
    /// Short commit id.
    pub(super) commit: String,
    pub(super) subject: String,
    pub(super) author: String,
    /// `will-it-scale.per_process_ops of open1 (process, nr_task 1)`.
    pub(super) what: String,
    /// Where it was measured: `lab-1 (tcg-icount)`.
    pub(super) machine: String,
    /// `+50.0% [+48.1%, +51.9%]`.
    pub(super) size: String,
    pub(super) verdict: String,
    pub(super) verdict_class: &'static str,
    pub(super) verdict_letter: char,
    /// The comparison that measured the commit.
    pub(super) comparison_id: Option<i64>,
    pub(super) bisection_id: Option<i64>,
    /// open, acknowledged or expected.
    pub(super) state: String,
    pub(super) note: String,
    /// `by operator, 2026-12-02 14:03 UTC` once marked; empty while open.
    pub(super) marked: String,
    pub(super) found: String,
}

impl ChangeView {
    /// Whether it still waits for someone to look at it.
    pub fn is_open(&self) -> bool {
        self.state == ChangeState::Open.as_str()
    }
}

/// A change point's verdict as the verdict of a report it reads like.
fn verdict(v: ChangeVerdict) -> Verdict {
    match v {
        ChangeVerdict::Regression => Verdict::Regression,
        ChangeVerdict::Improvement => Verdict::Improvement,
        ChangeVerdict::Changed => Verdict::Changed,
    }
}

/// Sorts change points worst first ([`sort_worst_first`]): a change point
/// is a real change, so regressions come first, then changes of metrics
/// with no better direction, then improvements, the larger first within
/// each; equals keep their order.
pub(super) fn worst_first(changes: &mut [ChangeRow]) {
    sort_worst_first(changes, |c| {
        Some(Outcome {
            verdict: verdict(c.verdict),
            real_below_delta: false,
            change: c.change_percent,
        })
    });
}

/// `+50.0% [+48.1%, +51.9%]`: the change with its 95% interval.
pub fn size(change_percent: f64, low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => {
            let (l, h) = ends_text(l, h, 1);
            format!("{change_percent:+.1}% [{l}%, {h}%]")
        }
        _ => format!("{change_percent:+.1}%"),
    }
}

/// Who marked a change point and when: `by operator, <time>`.
fn marked(by: Option<&str>, at: Option<chrono::DateTime<chrono::Utc>>) -> String {
    match (by, at) {
        (Some(by), Some(at)) => format!("by {by}, {}", view::time(at)),
        (None, Some(at)) => view::time(at),
        _ => String::new(),
    }
}

impl From<ChangeRow> for ChangeView {
    fn from(c: ChangeRow) -> Self {
        let v = verdict(c.verdict);
        ChangeView {
            id: c.id,
            tree_id: c.tree_id,
            tree: c.tree,
            commit: view::short_commit(&c.commit_sha).to_string(),
            subject: c.subject,
            author: c.author,
            what: format!(
                "{} of {} ({}, nr_task {})",
                c.metric, c.workload, c.mode, c.nr_task
            ),
            machine: format!("{} ({})", c.machine, c.measurement),
            size: size(c.change_percent, c.low, c.high),
            verdict: c.verdict.as_str().to_string(),
            verdict_class: view::verdict_class(v),
            verdict_letter: view::verdict_letter(v),
            comparison_id: c.comparison_id,
            bisection_id: c.bisection_id,
            state: c.state.as_str().to_string(),
            note: c.note.unwrap_or_default(),
            marked: marked(c.acknowledged_by.as_deref(), c.acknowledged_at),
            found: view::time(c.created_at),
        }
    }
}

/// How many change points a page of `/changes` shows.
const SHOWN: i64 = 30;

/// Query of `/changes`; an empty state is any.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChangesQuery {
    /// open, acknowledged or expected.
    #[serde(default)]
    state: String,
    /// Change points with a smaller id only (the "older" link).
    #[serde(default)]
    before: Option<i64>,
}

/// One of the state links above the list.
#[derive(Debug)]
pub struct StateLink {
    label: &'static str,
    href: String,
    chosen: bool,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "changes.html")]
pub(super) struct ChangesPage {
    changes: Vec<ChangeView>,
    /// The state shown (empty for any), in words.
    state: String,
    states: Vec<StateLink>,
    /// Whether this is a later page (then the first is linked).
    later: bool,
    first: String,
    /// The next page, when there are older ones.
    older: Option<String>,
}

/// `/changes` in `state` (empty for any), below id `before` when given.
fn changes_href(state: &str, before: Option<i64>) -> String {
    let query: Vec<String> = [
        (!state.is_empty()).then(|| format!("state={state}")),
        before.map(|b| format!("before={b}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if query.is_empty() {
        "/changes".into()
    } else {
        format!("/changes?{}", query.join("&"))
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    Query(q): Query<ChangesQuery>,
) -> Result<ChangesPage> {
    let wanted = crate::http::listing::one_of(
        "state",
        Some(q.state.as_str()).filter(|s| !s.is_empty()),
        ChangeState::ALL,
        ChangeState::as_str,
    )?;
    let mut found = triage::list(
        &state,
        ChangeFilter {
            tree_id: None,
            state: wanted,
            before: q.before,
            limit: SHOWN + 1,
        },
    )
    .await?;
    let more = found.len() > SHOWN as usize;
    found.truncate(SHOWN as usize);
    let older = more
        .then(|| found.last().map(|c| changes_href(&q.state, Some(c.id))))
        .flatten();
    let states = std::iter::once(("any", ""))
        .chain(ChangeState::ALL.iter().map(|s| (s.as_str(), s.as_str())))
        .map(|(label, value)| StateLink {
            label,
            href: changes_href(value, None),
            chosen: value == q.state,
        })
        .collect();
    Ok(ChangesPage {
        changes: found.into_iter().map(ChangeView::from).collect(),
        state: q.state.clone(),
        states,
        later: q.before.is_some(),
        first: changes_href(&q.state, None),
        older,
    })
}

/// The acknowledge form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct AcknowledgeForm {
    /// An admin token.
    token: String,
    /// acknowledged or expected.
    state: String,
    #[serde(default)]
    note: String,
}

/// Marks a change point from the form and goes back to the page it was
/// sent from (303); a refusal is the error page with its reason.
pub(super) async fn acknowledge(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    form: std::result::Result<Form<AcknowledgeForm>, FormRejection>,
) -> Result<Redirect> {
    let Form(f) = form.map_err(|e| Error::Malformed(format!("bad form: {}", e.body_text())))?;
    let token = f.token.trim();
    if token.is_empty() {
        return Err(Error::Unauthorized(
            "no token: type an admin token to mark a change".into(),
        ));
    }
    let caller = Caller::of_token(&state.db, token).await?;
    triage::acknowledge(&state, &caller, id, &f.state, &f.note).await?;
    Ok(Redirect::to(&back(&headers)))
}

/// The local path of the referring page, `/` without one: never another
/// site.
fn back(headers: &HeaderMap) -> String {
    let Some(referer) = headers.get(REFERER).and_then(|v| v.to_str().ok()) else {
        return "/".into();
    };
    let path = match referer.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => referer,
    };
    if path.starts_with('/') && !path.starts_with("//") {
        path.to_string()
    } else {
        "/".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_referer(r: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(REFERER, r.parse().unwrap());
        h
    }

    #[test]
    fn going_back_stays_on_this_site() {
        assert_eq!(back(&HeaderMap::new()), "/");
        assert_eq!(
            back(&with_referer("http://perf.example.org/?changes_before=40")),
            "/?changes_before=40"
        );
        assert_eq!(back(&with_referer("https://x.org/trees/3")), "/trees/3");
        assert_eq!(back(&with_referer("https://x.org")), "/");
        assert_eq!(back(&with_referer("//evil.example/")), "/");
        assert_eq!(back(&with_referer("/trees/1")), "/trees/1");
    }

    #[test]
    fn sizes_carry_their_interval() {
        assert_eq!(
            size(50.04, Some(48.1), Some(51.9)),
            "+50.0% [+48.1%, +51.9%]"
        );
        assert_eq!(size(-3.0, None, None), "-3.0%");
        assert_eq!(
            size(-2.5, Some(-2.53), Some(-2.47)),
            "-2.5% [-2.53%, -2.47%]"
        );
    }
}
