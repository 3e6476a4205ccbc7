//! `/comparisons/{id}/profile`: where the time went, in one look. For each
//! (workload, mode, nr_task), the worst first (the regressing nr_task's
//! profile at the top), the functions whose share of the samples moved
//! most between base and patched (perf's "children": time in the function
//! and what it calls), each with its own time ("self") and, opened, the
//! call chains into it that moved (0-day's `calltrace` entries: the
//! function, its caller, that one's caller, …), base, patched and the
//! difference in points. A differential profile without a script: the
//! rows are sorted on the server, details open with a click.

use std::collections::HashMap;

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use patchperf_common::report::{Comparison, MetricComparison};

use super::view;
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error};

const CHILDREN: &str = "perf-profile.children.cycles-pp.";
const SELF: &str = "perf-profile.self.cycles-pp.";
const CALLTRACE: &str = "perf-profile.calltrace.cycles-pp.";

/// Functions listed a group, most moved first.
const FUNCTIONS_SHOWN: usize = 40;

/// Call chains listed under a function.
const CHAINS_SHOWN: usize = 8;

/// Functions whose chains start open.
const OPEN: usize = 3;

/// A share on both sides and how it moved.
#[derive(Debug, Clone, Copy, Default)]
struct Shares {
    base: Option<f64>,
    patched: Option<f64>,
}

impl Shares {
    fn of(m: &MetricComparison) -> Shares {
        Shares {
            base: m.base.mean,
            patched: m.patched.mean,
        }
    }

    /// Patched minus base, in points; a side without the entry had less
    /// than the 0.05% profiles keep, counted as 0.
    fn delta(&self) -> f64 {
        self.patched.unwrap_or(0.0) - self.base.unwrap_or(0.0)
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("<0.05".to_string(), |v| format!("{v:.2}"))
}

fn points(d: f64) -> String {
    format!("{d:+.2}")
}

/// One call chain into a function, as shown.
#[derive(Debug)]
pub struct ChainView {
    /// `alloc_fd ← __x64_sys_dup ← do_syscall_64 ← …`.
    chain: String,
    base: String,
    patched: String,
    delta: String,
    class: &'static str,
}

/// One function, as shown.
#[derive(Debug)]
pub struct FunctionView {
    name: String,
    base: String,
    patched: String,
    delta: String,
    self_base: String,
    self_patched: String,
    self_delta: String,
    verdict: &'static str,
    class: &'static str,
    open: bool,
    chains: Vec<ChainView>,
}

/// One (workload, mode, nr_task) profile.
#[derive(Debug)]
pub struct ProfileGroup {
    title: String,
    functions: Vec<FunctionView>,
    /// Functions profiled in all.
    total: usize,
}

#[derive(Debug, Template)]
#[template(path = "profile.html")]
pub(super) struct ProfilePage {
    id: i64,
    groups: Vec<ProfileGroup>,
}

/// Grows (`up`) or shrinks: a larger share of the samples is more time
/// per operation there, whichever the throughput did.
fn class(delta: f64) -> &'static str {
    if delta > 0.0 {
        "up"
    } else if delta < 0.0 {
        "down"
    } else {
        ""
    }
}

/// The profile of one group: functions by |Δ children|, their self time and
/// the chains into them by |Δ|.
fn group(c: &Comparison) -> Option<ProfileGroup> {
    let mut children: Vec<(&str, &MetricComparison)> = Vec::new();
    let mut own: HashMap<&str, Shares> = HashMap::new();
    let mut chains: HashMap<&str, Vec<(&str, Shares)>> = HashMap::new();
    for m in &c.metrics {
        if let Some(f) = m.name.strip_prefix(CHILDREN) {
            children.push((f, m));
        } else if let Some(f) = m.name.strip_prefix(SELF) {
            own.insert(f, Shares::of(m));
        } else if let Some(chain) = m.name.strip_prefix(CALLTRACE) {
            // The function the chain is about comes first (names lose
            // gcc's dotted clone suffixes before they get here).
            let f = chain.split('.').next().unwrap_or(chain);
            chains.entry(f).or_default().push((chain, Shares::of(m)));
        }
    }
    if children.is_empty() {
        return None;
    }
    let total = children.len();
    children.sort_by(|a, b| {
        Shares::of(b.1)
            .delta()
            .abs()
            .total_cmp(&Shares::of(a.1).delta().abs())
            .then_with(|| a.0.cmp(b.0))
    });
    let functions = children
        .into_iter()
        .take(FUNCTIONS_SHOWN)
        .enumerate()
        .map(|(i, (f, m))| {
            let s = Shares::of(m);
            let o = own.get(f).copied().unwrap_or_default();
            let mut into: Vec<(&str, Shares)> = chains.remove(f).unwrap_or_default();
            into.sort_by(|a, b| b.1.delta().abs().total_cmp(&a.1.delta().abs()));
            FunctionView {
                name: f.to_string(),
                base: pct(s.base),
                patched: pct(s.patched),
                delta: points(s.delta()),
                self_base: pct(o.base),
                self_patched: pct(o.patched),
                self_delta: points(o.delta()),
                verdict: m.verdict.as_str(),
                class: view::verdict_class(m.verdict),
                open: i < OPEN,
                chains: into
                    .into_iter()
                    .take(CHAINS_SHOWN)
                    .map(|(chain, s)| ChainView {
                        chain: chain.split('.').collect::<Vec<_>>().join(" ← "),
                        base: pct(s.base),
                        patched: pct(s.patched),
                        delta: points(s.delta()),
                        class: class(s.delta()),
                    })
                    .collect(),
            }
        })
        .collect();
    Some(ProfileGroup {
        title: c.header.title(),
        functions,
        total,
    })
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Html<String>> {
    let built = super::metrics::report_of(&state, id).await?;
    // The regressing nr_task first: it is whose profile a reader came for.
    let groups = built
        .worst_first()
        .into_iter()
        .filter_map(|g| group(&g.comparison))
        .collect();
    let html = ProfilePage { id, groups }
        .render()
        .map_err(|e| Error::Internal(format!("rendering the profile of comparison {id}: {e}")))?;
    Ok(Html(html))
}
