//! Tracked trees: a branch patchperf measures by itself. Adding a tree
//! notes its head; each new head (seen by the watcher's poll, or at once
//! through the push hook) is measured against the last one tested as a
//! git range comparison, one step per commit (see [`super::submit`]), its
//! commits appended to the tree's tested line. Its kernels are built over
//! the tree's anchor with the commits since carried as patches
//! ([`carried`]), so a new head costs one incremental build. When such a comparison is
//! final, each measured commit becomes a point of the history of every
//! (workload, mode, nr_task, headline metric) on its machine, and the
//! histories it touched are searched for level shifts
//! ([`patchperf_common::stats::changepoint`]): a new one is stored as a
//! change point, and one whose old and new levels lie more than a commit
//! apart starts a bisection between them (at most
//! [`BISECTIONS_PER_DAY`] a tree a day), and one at a single commit is
//! mailed to its author and the tree's Cc ([`super::notify`]).

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use patchperf_common::api::{
    BisectionCreateRequest, BisectionSubmission, ComparisonCreateRequest, ComparisonSubmission,
    PushResponse, TreeSubmission, TreeView,
};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::metric::{self, Direction};
use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
use patchperf_common::run::{MeasurementMode, Side};
use patchperf_common::stats::summary;
use patchperf_common::stats::{ChangePointPolicy, Interval, Shift, change_points};

use crate::db::changes::NewChange;
use crate::db::comparisons::ComparisonRow;
use crate::db::history::{NewPoint, SeriesKey};
use crate::db::trees::{NewTree, TreeRow};
use crate::domain::Context;
use crate::domain::comparison::{self, Carried, Origin};
use crate::domain::report::load_shared;
use crate::domain::workers::{Done, Worker};
use crate::domain::{bisect, machines, notify, range, submit};
use crate::{Error, db};

/// Most bisections a tree's change points start in a day: a noisy tree
/// must not fill the lab with probes.
pub const BISECTIONS_PER_DAY: i64 = 3;

/// Most commits a tree's kernels carry over its anchor: each rides on
/// both sides of every later test (and is rebuilt where it touches what
/// the new head touches), so past these the anchor moves up, at the cost
/// of one full build (ccache-warm).
pub const MAX_CARRIED: usize = 32;

/// How often the watcher wakes.
const WAKE: Duration = Duration::from_secs(15);

/// How long a branch goes unlooked-at before the watcher asks its remote.
const POLL_EVERY: Duration = Duration::from_secs(300);

/// Adds the tree `req` describes, added by token `created_by`, at its
/// branch's head now; its id.
pub async fn create(ctx: &Context, created_by: i64, req: &TreeSubmission) -> Result<i64, Error> {
    let machine_id = match &req.machine {
        Some(name) => Some(machines::named(&ctx.db, name, req.backend).await?.id),
        None => None,
    };
    let head = range::head(ctx, &req.url, &req.branch).await?;
    let mut tx = ctx.db.begin().await?;
    let new = NewTree {
        name: &req.name,
        url: &req.url,
        branch: &req.branch,
        workloads: &req.workloads,
        params: &req.params,
        runs_per_side: i32::try_from(req.runs).unwrap_or(i32::MAX),
        max_runs_per_side: req.max_runs.map(|m| i32::try_from(m).unwrap_or(i32::MAX)),
        backend: req.backend.map(|b| b.as_str()),
        config_fragment: req.config_fragment.as_deref(),
        machine_id,
        min_hours: i32::try_from(req.min_hours).unwrap_or(i32::MAX),
        cc: &req.cc,
        webhook_url: req.webhook_url.as_deref(),
        head: &head.sha,
        created_by,
    };
    let id = db::trees::insert(&mut tx, &new).await?.ok_or_else(|| {
        Error::WrongState(format!("a tree named `{}` is tracked already", req.name))
    })?;
    db::trees::append_commit(
        &mut tx,
        id,
        &head.sha,
        &head.subject,
        &head.author,
        committed_at(head.committed_at),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

fn committed_at(seconds: Option<i64>) -> Option<DateTime<Utc>> {
    seconds.and_then(|s| DateTime::from_timestamp(s, 0))
}

/// Looks at the tree's branch now: a head not tested yet is queued as a
/// range comparison against the last one tested, unless the tree's
/// schedule says it is too soon. Everything git is asked (the head, the
/// range, the carried commits) is asked before any row is locked, and the
/// comparison and the tree's new tested head are stored in one
/// transaction: a server killed halfway leaves the push to do again, never
/// done twice.
pub async fn poll(ctx: &Context, id: i64) -> Result<PushResponse, Error> {
    let tree = {
        let mut conn = ctx.db.acquire().await?;
        let tree = db::trees::find(&mut conn, id, false)
            .await?
            .ok_or_else(|| Error::NotFound(format!("no tree {id}")))?;
        // Noted first, so that a remote that fails is asked again only
        // after the poll interval, not at every wake of the watcher.
        db::trees::polled(&mut conn, id).await?;
        tree
    };
    let head = range::head(ctx, &tree.url, &tree.branch).await?;
    let answer = |comparison_id, status: String| PushResponse {
        tree_id: id,
        head: head.sha.clone(),
        comparison_id,
        status,
    };
    if head.sha == tree.tested_commit {
        return Ok(answer(None, "no new commit".into()));
    }
    if let Some(next) = next_allowed(&tree) {
        return Ok(answer(
            None,
            format!(
                "new head waits: at most one test every {} hours, the next from {next}",
                tree.min_hours
            ),
        ));
    }
    let req = ComparisonSubmission::try_from(request(&tree, &head.sha))
        .map_err(|e| Error::Internal(format!("tree {id}'s stored settings: {e}")))?;
    let carried = carried(ctx, &tree).await;
    let prepared = submit::prepare(
        ctx,
        &req,
        tree.created_by,
        Origin::TreeHead { tree_id: id },
        carried,
    )
    .await?;

    let mut tx = ctx.db.begin().await?;
    let locked = db::trees::find(&mut tx, id, true)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no tree {id}")))?;
    // Another poll (this server's hook, or another server) took this head
    // while git was asked.
    if locked.tested_commit != tree.tested_commit || locked.anchor_commit != tree.anchor_commit {
        tx.commit().await?;
        return Ok(answer(
            None,
            format!(
                "queued meanwhile by another poll (tested head now {})",
                locked.tested_commit
            ),
        ));
    }
    let comparison_id =
        comparison::queue(&mut tx, &prepared.order, ctx.config.max_attempts).await?;
    let anchor = match &prepared.order.carried {
        Some(Carried::New { over, .. } | Carried::Stored { over, .. }) => over.clone(),
        None => tree.tested_commit.clone(),
    };
    let mut commits = 0;
    for c in prepared.range.iter().flat_map(|r| r.commits.iter()) {
        db::trees::append_commit(
            &mut tx,
            id,
            &c.sha,
            &c.subject,
            &c.author,
            committed_at(c.committed_at),
        )
        .await?;
        commits += 1;
    }
    db::trees::tested(&mut tx, id, &head.sha, &anchor).await?;
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    tracing::info!(
        tree = id,
        comparison = comparison_id,
        commits,
        "new head queued"
    );
    Ok(answer(
        Some(comparison_id),
        format!(
            "queued comparison {comparison_id} of {commits} new commit{}",
            if commits == 1 { "" } else { "s" }
        ),
    ))
}

/// The commits from the tree's anchor to its last tested head, over which
/// the next head's kernels are built: the runner has the last head's
/// kernel in its cache under exactly that series and builds the new one
/// incrementally on the anchor's build tree. `None` (nothing carried yet,
/// more than [`MAX_CARRIED`] commits, or an anchor no longer on the
/// branch's first-parent line after a forced push) builds the range over
/// its own start, which becomes the anchor.
async fn carried(ctx: &Context, tree: &TreeRow) -> Option<Carried> {
    if tree.anchor_commit == tree.tested_commit {
        return None;
    }
    let spelled = format!("{}..{}", tree.anchor_commit, tree.tested_commit);
    match range::read(ctx, &tree.url, &spelled, ctx.config.body_limit / 2).await {
        Ok(r) if r.commits.len() + r.empty.len() <= MAX_CARRIED => Some(Carried::New {
            over: r.from,
            mbox: r.mbox,
        }),
        Ok(r) => {
            tracing::info!(
                tree = tree.id,
                commits = r.commits.len() + r.empty.len(),
                "the anchor moves up to the last tested head"
            );
            None
        }
        Err(e) => {
            tracing::info!(tree = tree.id, error = %e, "the anchor moves up to the last tested head");
            None
        }
    }
}

/// When the schedule lets the next test start, if that is later than now.
fn next_allowed(tree: &TreeRow) -> Option<DateTime<Utc>> {
    let last = tree.tested_at?;
    let next = last + chrono::Duration::hours(i64::from(tree.min_hours));
    (tree.min_hours > 0 && next > Utc::now()).then_some(next)
}

/// The range comparison of `head` against the tree's last tested head.
fn request(tree: &TreeRow, head: &str) -> ComparisonCreateRequest {
    ComparisonCreateRequest {
        base: BaseSource::Git {
            url: tree.url.clone(),
            commit: tree.tested_commit.clone(),
        },
        mbox: String::new(),
        aa: false,
        per_patch: false,
        range: Some(format!("{}..{head}", tree.tested_commit)),
        workloads: tree.workloads.clone(),
        params: tree.params.0.clone(),
        runs: u32::try_from(tree.runs_per_side).unwrap_or(3),
        max_runs: tree.max_runs_per_side.and_then(|m| u32::try_from(m).ok()),
        backend: tree.backend.as_deref().and_then(MeasurementMode::parse),
        config_fragment: tree.config_fragment.clone(),
        machine: tree.machine_name.clone(),
        order_seed: None,
    }
}

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
                db::history::insert(&mut tx, &point.as_new()).await?;
                let key = point.key();
                if !touched.contains(&key) {
                    touched.push(key);
                }
            }
        }
        db::history::recorded(&mut tx, id).await?;
        tx.commit().await?;
        if let Some(tree_id) = c.tree_id {
            for key in &touched {
                detect(ctx, tree_id, key).await?;
            }
        }
    }
    Ok(due.len())
}

/// Which history a point belongs to, owned.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    tree_id: i64,
    machine_id: i64,
    measurement: String,
    workload: String,
    mode: &'static str,
    nr_task: i32,
    metric: String,
}

impl Key {
    fn borrowed(&self) -> SeriesKey<'_> {
        SeriesKey {
            tree_id: self.tree_id,
            workload: &self.workload,
            mode: self.mode,
            nr_task: self.nr_task,
            metric: &self.metric,
            machine_id: self.machine_id,
            measurement: &self.measurement,
        }
    }
}

/// Looks for level shifts in one history and stores the new ones; a new
/// one with more than one commit between its levels starts a bisection.
async fn detect(ctx: &Context, tree_id: i64, key: &Key) -> Result<(), Error> {
    let points = db::history::points(&ctx.db, key.borrowed()).await?;
    let runs: Vec<&[f64]> = points.iter().map(|p| p.runs.as_slice()).collect();
    let found = change_points(&runs, &ChangePointPolicy::default());
    for shift in found.shifts {
        let (Some(before), Some(at)) = (
            shift.index.checked_sub(1).and_then(|i| points.get(i)),
            points.get(shift.index),
        ) else {
            continue;
        };
        let verdict =
            match (metric::direction(&key.metric), shift.shift) {
                (Direction::HigherIsBetter, Shift::Up)
                | (Direction::LowerIsBetter, Shift::Down) => "improvement",
                (Direction::HigherIsBetter, Shift::Down)
                | (Direction::LowerIsBetter, Shift::Up) => "regression",
                (Direction::Neutral, _) => "changed",
            };
        let interval = match shift.interval {
            Interval::Bounded { low, high } => Some((low, high)),
            Interval::Unbounded => None,
        };
        let mut tx = ctx.db.begin().await?;
        let new = NewChange {
            key: key.borrowed(),
            position: at.position,
            from_position: before.position,
            commit_sha: &at.commit,
            mean_before: shift.mean_before,
            mean_after: shift.mean_after,
            change_percent: shift.change_percent,
            interval,
            p: shift.p,
            verdict,
            comparison_id: at.comparison_id,
        };
        let Some(change_id) = db::changes::insert(&mut tx, &new).await? else {
            continue;
        };
        tx.commit().await?;
        tracing::info!(
            tree = tree_id,
            change = change_id,
            commit = %at.commit,
            metric = %key.metric,
            change_percent = shift.change_percent,
            "change point found"
        );
        if at.position - before.position > 1 {
            bisect_change(ctx, tree_id, key, change_id, &before.commit, &at.commit).await?;
        } else {
            // One commit moved it: tell its author (and the tree's Cc).
            let headline = format!(
                "{:+.1}% {verdict} of {} ({})",
                shift.change_percent, key.metric, key.workload
            );
            let mut conn = ctx.db.acquire().await?;
            notify::queue_report(
                ctx,
                &mut conn,
                tree_id,
                at.comparison_id,
                &at.commit,
                &headline,
            )
            .await?;
        }
    }
    Ok(())
}

/// Starts the bisection of change point `change_id` between the last
/// commit of the old level and the first of the new, unless the tree
/// started [`BISECTIONS_PER_DAY`] already.
async fn bisect_change(
    ctx: &Context,
    tree_id: i64,
    key: &Key,
    change_id: i64,
    good: &str,
    bad: &str,
) -> Result<(), Error> {
    if db::changes::bisections_today(&ctx.db, tree_id).await? >= BISECTIONS_PER_DAY {
        tracing::info!(
            tree = tree_id,
            change = change_id,
            "no bisection: the day's are spent"
        );
        return Ok(());
    }
    let tree = {
        let mut conn = ctx.db.acquire().await?;
        db::trees::find(&mut conn, tree_id, false)
            .await?
            .ok_or_else(|| Error::Internal(format!("tree {tree_id} vanished")))?
    };
    let machine = db::machines::find(&ctx.db, key.machine_id)
        .await?
        .map(|m| m.name);
    let nr_task = u32::try_from(key.nr_task).unwrap_or(1);
    let req = BisectionCreateRequest {
        comparison: None,
        base: Some(BaseSource::Git {
            url: tree.url.clone(),
            commit: good.to_string(),
        }),
        bad: Some(bad.to_string()),
        workload: key.workload.clone(),
        metric: Some(key.metric.clone()),
        params: Some(WorkloadParams {
            nr_task: vec![NrTask::Count(nr_task)],
            ..tree.params.0.clone()
        }),
        runs: u32::try_from(tree.runs_per_side).ok(),
        max_runs: tree.max_runs_per_side.and_then(|m| u32::try_from(m).ok()),
        backend: tree.backend.as_deref().and_then(MeasurementMode::parse),
        config_fragment: tree.config_fragment.clone(),
        machine,
        order_seed: None,
    };
    let req = BisectionSubmission::try_from(req)
        .map_err(|e| Error::Internal(format!("change point {change_id}'s bisection: {e}")))?;
    let bisection = bisect::create(ctx, tree.created_by, &req).await?;
    let mut conn = ctx.db.acquire().await?;
    db::changes::set_bisection(&mut conn, change_id, bisection).await?;
    Ok(())
}

/// A point to write, owning what [`NewPoint`] borrows.
struct Point {
    tree_id: i64,
    machine_id: i64,
    measurement: String,
    workload: String,
    mode: &'static str,
    nr_task: i32,
    metric: String,
    position: i32,
    commit: String,
    runs: Vec<f64>,
    comparison_id: i64,
}

impl Point {
    fn key(&self) -> Key {
        Key {
            tree_id: self.tree_id,
            machine_id: self.machine_id,
            measurement: self.measurement.clone(),
            workload: self.workload.clone(),
            mode: self.mode,
            nr_task: self.nr_task,
            metric: self.metric.clone(),
        }
    }

    fn as_new(&self) -> NewPoint<'_> {
        NewPoint {
            tree_id: self.tree_id,
            machine_id: self.machine_id,
            measurement: &self.measurement,
            workload: &self.workload,
            mode: self.mode,
            nr_task: self.nr_task,
            metric: &self.metric,
            position: self.position,
            commit_sha: &self.commit,
            runs: &self.runs,
            mean: summary::mean(&self.runs).unwrap_or(f64::NAN),
            interval: summary::mean_interval(&self.runs),
            comparison_id: self.comparison_id,
        }
    }
}

/// The points a finished tree comparison measured: each step's commit (or
/// the range's end when it has no steps) from its patched side, and the
/// range's start from the base side of the first.
async fn points(
    ctx: &Context,
    c: &ComparisonRow,
    tree_id: i64,
    machine_id: i64,
) -> Result<Vec<Point>, Error> {
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
                out.push(Point {
                    tree_id,
                    machine_id,
                    measurement: h.measurement.map_or("unknown", |m| m.as_str()).to_string(),
                    workload: h.workload.clone(),
                    mode: h.mode.as_str(),
                    nr_task: i32::try_from(h.nr_task).unwrap_or(i32::MAX),
                    metric: m.name.clone(),
                    position: *position,
                    commit: commit.clone().unwrap_or_default(),
                    runs: stats.values.clone(),
                    comparison_id: id,
                });
            }
        }
    }
    Ok(out)
}

/// The tree as the API shows it.
pub fn view(ctx: &Context, t: TreeRow) -> TreeView {
    TreeView {
        id: t.id,
        page_url: ctx.config.link(&format!("/trees/{}", t.id)),
        name: t.name,
        url: t.url,
        branch: t.branch,
        workloads: t.workloads,
        params: t.params.0,
        runs_per_side: t.runs_per_side,
        min_hours: t.min_hours,
        cc: t.cc,
        webhook_url: t.webhook_url,
        tested_commit: t.tested_commit,
        tested_at: t.tested_at,
        polled_at: t.polled_at,
    }
}

/// Starts the `tree-watcher` worker: every [`WAKE`] it looks at the
/// branches not looked at for [`POLL_EVERY`] (one tree that fails is logged
/// and the others go on), then writes the history of finished comparisons.
pub fn spawn_watcher(ctx: &Context) -> tokio::task::JoinHandle<()> {
    Worker::every("tree-watcher", WAKE).spawn(ctx, |ctx| async move {
        let ids = db::trees::due(&ctx.db, POLL_EVERY.as_secs_f64()).await?;
        for &id in &ids {
            if let Err(e) = poll(&ctx, id).await {
                tracing::warn!(tree = id, error = %e, "looking at the branch failed");
            }
        }
        let written = record_history(&ctx).await?;
        Ok(Done::Handled(ids.len() + written))
    })
}
