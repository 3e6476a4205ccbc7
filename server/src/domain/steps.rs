//! Per-patch comparisons: a series of N ≥ 2 patches measured step by step.
//! The whole-series comparison (the parent) gets N step comparisons, step k
//! booting patches 1..k-1 against patches 1..k; each step is an ordinary
//! comparison (its own jobs, runs, stored report and verdict) with a parent
//! and a position. Here: creating the steps, and what the parent shows of
//! them. The queue runs a family's steps in order before the parent
//! ([`crate::db::jobs::next_claimable`]) on one machine
//! ([`crate::db::comparisons::pin_and_start`]); a step whose patch does not
//! apply or build fails the steps after it and the parent
//! ([`crate::domain::lifecycle::finish_failed`]).

use patchperf_common::api::{StepHeadline, StepOf, StepView};
use patchperf_common::mbox;
use sqlx::PgConnection;

use crate::db::comparisons::{ComparisonRow, NewComparison};
use crate::domain::Context;
use crate::domain::report::verdict::verdict_view;
use crate::domain::{interleave, lifecycle};
use crate::{Error, db};

/// Creates the step comparisons of the per-patch comparison `parent_id`
/// (stored as `parent`, whose series is `mbox`), each with its jobs; returns
/// how many. A series of fewer than two patches has no steps: its one step
/// would be the whole series again. For a git range, `commits` are the
/// commits the patches are, in order (empty for a mailed series).
pub async fn create(
    conn: &mut PgConnection,
    parent_id: i64,
    parent: &NewComparison<'_>,
    mbox: &str,
    commits: &[String],
    max_attempts: u32,
) -> Result<usize, Error> {
    let prefixes = mbox::prefixes(mbox);
    if prefixes.len() < 2 {
        return Ok(0);
    }
    let runs = u32::try_from(parent.runs_per_side).unwrap_or(0);
    let mut base_series_id = None;
    for (index, prefix) in prefixes.iter().enumerate() {
        let series = mbox::parse(prefix)
            .map_err(|e| Error::Internal(format!("patches 1..{} of the series: {e}", index + 1)))?;
        let series_id = db::patches::insert_series(conn, prefix, &series).await?;
        let step = i32::try_from(index + 1).unwrap_or(i32::MAX);
        // Each step draws its own boot order, reproducibly from the parent's.
        let seed = (parent.order_seed as u64).wrapping_add(index as u64 + 1);
        let new = NewComparison {
            series_id,
            base_series_id,
            step_of: Some((parent_id, step)),
            order_seed: seed as i64,
            commit_sha: commits.get(index).cloned(),
            git_range: None,
            probe_of: None,
            ..parent.clone()
        };
        let id = db::comparisons::insert(conn, &new).await?;
        lifecycle::create_jobs(conn, id, &interleave::plan(runs, seed), 0, max_attempts).await?;
        base_series_id = Some(series_id);
    }
    Ok(prefixes.len())
}

/// The patch a step measures, as its subject.
async fn step_subject(ctx: &Context, series_id: i64, step: i32) -> Result<String, Error> {
    let messages = db::patches::messages(&ctx.db, series_id).await?;
    let k = usize::try_from(step).unwrap_or(0);
    Ok(messages
        .into_iter()
        .filter(|m| m.has_diff)
        .nth(k.saturating_sub(1))
        .map(|m| m.subject)
        .unwrap_or_default())
}

/// For a step: which patch it measures and its parent.
pub async fn step_of(ctx: &Context, c: &ComparisonRow) -> Result<Option<StepOf>, Error> {
    let (Some(parent_id), Some(step)) = (c.parent_id, c.step) else {
        return Ok(None);
    };
    let of = db::comparisons::step_count(&ctx.db, parent_id).await?;
    Ok(Some(StepOf {
        parent_id,
        step: u32::try_from(step).unwrap_or(0),
        of: u32::try_from(of).unwrap_or(0),
        subject: step_subject(ctx, c.series_id, step).await?,
    }))
}

/// The steps of comparison `c` with each one's verdict and headlines, from
/// their stored reports (empty for a comparison without steps).
pub async fn views(ctx: &Context, c: &ComparisonRow) -> Result<Vec<StepView>, Error> {
    let mut views = Vec::new();
    for s in db::comparisons::steps(&ctx.db, c.id).await? {
        let row = db::comparisons::find(&ctx.db, s.id)
            .await?
            .ok_or_else(|| Error::Internal(format!("step {} vanished", s.id)))?;
        let report = crate::domain::report::load_shared(ctx, &row).await?;
        let overall = verdict_view(&report, String::new()).overall;
        let headlines = report
            .groups
            .iter()
            .filter_map(|g| {
                let h = &g.comparison.header;
                g.comparison.headline_metric().map(|m| StepHeadline {
                    workload: h.workload.clone(),
                    mode: h.mode,
                    nr_task: h.nr_task,
                    metric: m.name.clone(),
                    change: m.change,
                    verdict: m.verdict,
                })
            })
            .collect();
        let failure = db::jobs::for_comparison(&ctx.db, s.id)
            .await?
            .into_iter()
            .find_map(|j| j.failure_detail.filter(|_| j.failure_reason.is_some()));
        views.push(StepView {
            step: u32::try_from(s.step).unwrap_or(0),
            comparison_id: s.id,
            subject: step_subject(ctx, s.series_id, s.step).await?,
            commit: s.commit_sha,
            status: s.status,
            overall,
            headlines,
            failure,
        });
    }
    Ok(views)
}
