//! The links a kernel developer expects at the top of a comparison's
//! page: a tracked tree's comparison to its tree, the tree's histories and
//! the change point found at a commit it measured; a comparison to every
//! bisection of it ([`crate::domain::comparison::links`]).

use patchperf_common::api::BisectionStatus;

use crate::domain::comparison::links::Links;

/// A link: where, and what it says.
#[derive(Debug)]
pub struct Link {
    pub(crate) href: String,
    pub(crate) text: String,
}

/// A tracked tree's comparison: its tree, history and change points.
#[derive(Debug)]
pub struct TreeLinks {
    pub(crate) tree: Link,
    pub(crate) history: Link,
    pub(crate) changes: Vec<Link>,
}

/// A list series' comparison: the series and its list.
#[derive(Debug)]
pub struct SeriesLinks {
    pub(crate) series: Link,
    pub(crate) list: Link,
}

/// The links of the page, from what the comparison leads to.
pub(super) fn views(links: Links) -> (Option<TreeLinks>, Option<SeriesLinks>, Vec<Link>) {
    let series = links.series.as_ref().map(|s| SeriesLinks {
        series: Link {
            href: format!("/series/{}", s.id),
            text: format!("v{} of a series", s.version),
        },
        list: Link {
            href: format!("/lists/{}", s.list_id),
            text: s.list.clone(),
        },
    });
    let tree = links.tree.map(|t| TreeLinks {
        tree: Link {
            href: format!("/trees/{}", t.id),
            text: t.name.clone(),
        },
        history: Link {
            href: format!("/trees/{}#history", t.id),
            text: "its history".into(),
        },
        changes: t
            .changes
            .iter()
            .map(|c| Link {
                href: format!("/trees/{}#change-{}", t.id, c.id),
                text: format!(
                    "change point: {} {:+.1}% of {} of {} ×{}",
                    c.verdict.as_str(),
                    c.change_percent,
                    c.metric,
                    c.workload,
                    c.nr_task
                ),
            })
            .collect(),
    });
    let bisections = links
        .bisections
        .iter()
        .map(|b| {
            // The answer's first line (`first bad commit: [0123456789] …`).
            let said = match (&b.outcome, b.status) {
                (Some(o), _) => o.0.summary.lines().next().unwrap_or_default().to_string(),
                (None, BisectionStatus::Running) => format!("running, {} probes so far", b.probes),
                (None, status) => status.as_str().to_string(),
            };
            Link {
                href: format!("/bisections/{}", b.id),
                text: format!(
                    "bisection {} of {} of {}: {said}",
                    b.id, b.metric, b.workload
                ),
            }
        })
        .collect();
    (tree, series, bisections)
}
