//! A tracked tree's history: once a tree's comparison is final, each
//! measured commit becomes a point of the history of every (workload, mode,
//! nr_task, headline metric) on its machine, and the histories it touched
//! are searched for change points ([`super::change_points`]).

use std::collections::HashMap;

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::metric;
use patchperf_common::protocol::BaseSource;
use patchperf_common::run::{MeasurementMode, Side};
use patchperf_common::stats::calibration;
use patchperf_common::stats::change::ChangeUnit;
use patchperf_common::stats::summary;
use patchperf_common::stats::verdict::VerdictPolicy;
use patchperf_common::workload::TaskMode;

use super::change_points;
use crate::db::comparisons::ComparisonRow;
use patchperf_common::api::{HistoryPoint, HistoryQuery};

/// A history as this view returns it.
pub use crate::db::history::HistoryRow;
use crate::db::history::{HistoryKey, NewPoint};
use crate::domain::Context;
use crate::domain::report::{load_shared, noise_floors};
use crate::{Error, db};

/// Writes the history points of every finished tree comparison not yet
/// written, then looks for change points in the histories they touched;
/// how many comparisons it wrote.
pub async fn record_history(ctx: &Context) -> Result<usize, Error> {
    let due = db::history::due(&ctx.db).await?;
    for &id in &due {
        let Some(c) = db::comparisons::find(&ctx.db, id).await? else {
            continue;
        };
        let mut touched = Vec::new();
        let mut tx = ctx.db.begin().await?;
        if let (Some(tree_id), Some(machine_id)) = (c.tree_id, c.machine_id) {
            for point in points(ctx, &c, tree_id, machine_id).await? {
                db::history::insert(&mut tx, &point).await?;
                if !touched.contains(&point.key) {
                    touched.push(point.key);
                }
            }
        }
        db::history::recorded(&mut tx, id).await?;
        tx.commit().await?;
        if let Some(tree_id) = c.tree_id {
            for key in &touched {
                change_points::detect(ctx, tree_id, key).await?;
            }
        }
    }
    Ok(due.len())
}

/// The points a finished tree comparison measured: each step's commit (or
/// the range's end when it has no steps) from its patched side, and the
/// range's start from the base side of the first.
async fn points(
    ctx: &Context,
    c: &ComparisonRow,
    tree_id: i64,
    machine_id: i64,
) -> Result<Vec<NewPoint>, Error> {
    let positions: HashMap<String, i32> = db::trees::commits(&ctx.db, tree_id)
        .await?
        .into_iter()
        .map(|tc| (tc.commit_sha, tc.position))
        .collect();
    let start = match &c.base.0 {
        BaseSource::Git { commit, .. } => Some(commit.clone()),
        BaseSource::Tarball { .. } => None,
    };
    let steps = db::comparisons::steps(&ctx.db, c.id).await?;
    let measured: Vec<(i64, Option<String>)> = if steps.is_empty() {
        vec![(c.id, c.commit_sha.clone())]
    } else {
        steps
            .into_iter()
            .filter(|s| s.status == ComparisonStatus::Done)
            .map(|s| (s.id, s.commit_sha))
            .collect()
    };
    let mut out = Vec::new();
    for (i, (id, commit)) in measured.into_iter().enumerate() {
        let Some(row) = db::comparisons::find(&ctx.db, id).await? else {
            continue;
        };
        if row.status != ComparisonStatus::Done {
            continue;
        }
        let report = load_shared(ctx, &row).await?;
        let mut sides = vec![(Side::Patched, commit)];
        if i == 0 {
            sides.push((Side::Base, start.clone()));
        }
        for (side, commit) in sides {
            let Some(position) = commit.as_ref().and_then(|c| positions.get(c)) else {
                continue;
            };
            for g in &report.groups {
                let h = &g.comparison.header;
                let Some(m) = g.comparison.headline_metric() else {
                    continue;
                };
                let stats = match side {
                    Side::Base => &m.base,
                    Side::Patched => &m.patched,
                };
                if stats.values.is_empty() {
                    continue;
                }
                out.push(NewPoint {
                    key: HistoryKey {
                        tree_id,
                        machine_id,
                        measurement: h.measurement.map_or("unknown", |m| m.as_str()).to_string(),
                        workload: h.workload.clone(),
                        mode: h.mode.as_str().to_string(),
                        nr_task: i32::try_from(h.nr_task).unwrap_or(i32::MAX),
                        metric: m.name.clone(),
                    },
                    position: *position,
                    commit_sha: commit.clone().unwrap_or_default(),
                    runs: stats.values.clone(),
                    mean: summary::mean(&stats.values).unwrap_or(f64::NAN),
                    interval: summary::mean_interval(&stats.values),
                    comparison_id: id,
                });
            }
        }
    }
    Ok(out)
}

/// One history of a tracked tree with its points, oldest commit first.
#[derive(Debug)]
pub struct History {
    pub row: HistoryRow,
    pub points: Vec<HistoryPoint>,
}

/// Every history of tree `id`, with its points.
pub async fn of_tree(ctx: &Context, id: i64) -> Result<Vec<History>, Error> {
    let mut all = Vec::new();
    for row in db::history::of_tree(&ctx.db, id).await? {
        let points = db::history::points(&ctx.db, &row.key(id)).await?;
        all.push(History { row, points });
    }
    Ok(all)
}

/// The history of tree `id` that `q` names, with its points: `NotFound`
/// without the tree, and as [`pick`] says when `q` names several or none.
pub async fn named(ctx: &Context, id: i64, q: &HistoryQuery) -> Result<History, Error> {
    super::find(ctx, id).await?;
    let all = db::history::of_tree(&ctx.db, id).await?;
    let row = pick(id, &all, q)?.clone();
    let points = db::history::points(&ctx.db, &row.key(id)).await?;
    Ok(History { row, points })
}

/// The one history of tree `id` that `q` names (a part left out matches
/// any value), or a 400 that lists the histories there are.
pub fn pick<'a>(id: i64, all: &'a [HistoryRow], q: &HistoryQuery) -> Result<&'a HistoryRow, Error> {
    let matching: Vec<_> = all
        .iter()
        .filter(|s| {
            q.workload.as_ref().is_none_or(|w| *w == s.workload)
                && q.mode.as_ref().is_none_or(|m| *m == s.mode)
                && q.nr_task.is_none_or(|n| n == s.nr_task)
                && q.metric.as_ref().is_none_or(|m| *m == s.metric)
                && q.machine.as_ref().is_none_or(|m| *m == s.machine)
                && q.measurement.as_ref().is_none_or(|m| *m == s.measurement)
        })
        .collect();
    let [s] = matching.as_slice() else {
        let listed: Vec<String> = all.iter().map(query_of).collect();
        let what = if matching.is_empty() {
            "no history"
        } else {
            "several histories"
        };
        return Err(Error::Malformed(if listed.is_empty() {
            format!("tree {id} has no history yet")
        } else {
            format!(
                "the query names {what}; tree {id} has: {}",
                listed.join(", ")
            )
        }));
    };
    Ok(s)
}

/// The query naming history `s`: `workload=open1&mode=process&…`.
pub fn query_of(s: &HistoryRow) -> String {
    format!(
        "workload={}&mode={}&nr_task={}&metric={}&machine={}&measurement={}",
        s.workload, s.mode, s.nr_task, s.metric, s.machine, s.measurement
    )
}

/// δ in percent that a comparison of history `s`'s kind of run, made now
/// on its machine, would be judged with: from the machine's newest A/A
/// that measured that kind, else the measurement mode's default. `None`
/// for a metric that is itself a percentage (its δ is in points, not a
/// share of its level) or a kind the server cannot read back.
pub async fn delta_percent(ctx: &Context, s: &HistoryRow) -> Result<Option<f64>, Error> {
    let mode = match s.mode.as_str() {
        "process" => TaskMode::Process,
        "thread" => TaskMode::Thread,
        _ => return Ok(None),
    };
    let (Some(measurement), Ok(nr_task)) = (
        MeasurementMode::parse(&s.measurement),
        u32::try_from(s.nr_task),
    ) else {
        return Ok(None);
    };
    if metric::is_percentage(&s.metric) {
        return Ok(None);
    }
    let floors = noise_floors(ctx, s.machine_id, chrono::Utc::now(), None).await?;
    let floor = floors.get(&s.workload, mode, nr_task, Some(measurement));
    let policy = calibration::judging(
        VerdictPolicy::default(),
        Some(measurement),
        floor.map(|f| f.percent),
        calibration::Look::ONLY,
    );
    Ok(Some(policy.threshold(ChangeUnit::Percent)))
}
