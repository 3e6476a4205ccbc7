//! Change points of a tracked tree's histories: level shifts found with
//! [`patchperf_common::stats::changepoint`] and stored once each. One whose
//! old and new levels lie more than a commit apart starts a bisection
//! between them (at most [`BISECTIONS_PER_DAY`] a tree a day); one at a
//! single commit is mailed to its author and the tree's Cc
//! ([`crate::domain::outbox::notify`]).

use patchperf_common::api::{
    AskedParams, BisectionCreateRequest, BisectionSubmission, ChangeVerdict, Setup,
};
use patchperf_common::metric::{self, Direction};
use patchperf_common::protocol::{BaseSource, NrTask};
use patchperf_common::stats::{ChangePointPolicy, Interval, Shift, change_points};

use crate::db::changes::NewChange;
use crate::db::history::HistoryKey;
use crate::domain::{Context, bisection, outbox::notify};
use crate::{Error, db};

/// Most bisections a tree's change points start in a day: a noisy tree
/// must not fill the lab with probes.
pub const BISECTIONS_PER_DAY: i64 = 3;

/// Looks for level shifts in one history and stores the new ones; a new
/// one with more than one commit between its levels starts a bisection.
pub(super) async fn detect(ctx: &Context, tree_id: i64, key: &HistoryKey) -> Result<(), Error> {
    let points = db::history::points(&ctx.db, key).await?;
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
                | (Direction::LowerIsBetter, Shift::Down) => ChangeVerdict::Improvement,
                (Direction::HigherIsBetter, Shift::Down)
                | (Direction::LowerIsBetter, Shift::Up) => ChangeVerdict::Regression,
                (Direction::Neutral, _) => ChangeVerdict::Changed,
            };
        let interval = match shift.interval {
            Interval::Bounded { low, high } => Some((low, high)),
            Interval::Unbounded => None,
        };
        let mut tx = ctx.db.begin().await?;
        let new = NewChange {
            key,
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
    key: &HistoryKey,
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
    // On the machine whose history moved.
    let setup = Setup {
        machine,
        ..tree.setup()
    };
    let req = BisectionCreateRequest {
        base: Some(BaseSource::Git {
            url: tree.url.clone(),
            commit: good.to_string(),
        }),
        bad: Some(bad.to_string()),
        workload: key.workload.clone(),
        metric: Some(key.metric.clone()),
        params: Some(AskedParams {
            nr_task: vec![NrTask::Count(nr_task)],
            ..setup.params.clone()
        }),
        ..Default::default()
    }
    .measured_as(setup);
    let req = BisectionSubmission::try_from(req)
        .map_err(|e| Error::Internal(format!("change point {change_id}'s bisection: {e}")))?;
    let bisection = bisection::create(ctx, tree.created_by, &req).await?;
    let mut conn = ctx.db.acquire().await?;
    db::changes::set_bisection(&mut conn, change_id, bisection).await?;
    Ok(())
}
