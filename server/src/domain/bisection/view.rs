//! A bisection as the API and its page show it: its commits, each probe
//! with its reading and judgement, and the answer.

use patchperf_common::api::{BisectCommit, BisectionView, ProbeView};

use crate::db::bisections::BisectionRow;
/// A bisection as the listing returns it.
pub use crate::db::bisections::BisectionSummary;
use crate::domain::Context;
use crate::{Error, db};

use super::assess::assess;
use super::commits;

/// Bisection `id` as the API and its page show it.
pub async fn find(ctx: &Context, id: i64) -> Result<BisectionView, Error> {
    let b = db::bisections::find(&ctx.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no bisection {id}")))?;
    view(ctx, &b).await
}

/// A page of bisections, newest first: at most `limit`, below id `before`.
pub async fn list(
    ctx: &Context,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<BisectionSummary>, Error> {
    Ok(db::bisections::list(&ctx.db, before, limit).await?)
}

/// The bisection as the API and its page show it.
pub async fn view(ctx: &Context, b: &BisectionRow) -> Result<BisectionView, Error> {
    let commits = commits(ctx, b).await?;
    let a = assess(ctx, b, commits.len()).await?;
    let machine = match b
        .machine_id
        .or_else(|| a.probes.iter().find_map(|p| p.row.machine_id))
    {
        Some(id) => db::machines::find(&ctx.db, id).await?.map(|m| m.name),
        None => None,
    };
    let probes = a
        .probes
        .into_iter()
        .map(|p| {
            let position = u32::try_from(p.row.probe).unwrap_or(0);
            let commit = commits
                .get(usize::try_from(p.row.probe).unwrap_or(0).wrapping_sub(1))
                .cloned()
                .unwrap_or(BisectCommit {
                    position,
                    commit: p.row.commit_sha.clone(),
                    subject: String::new(),
                    author: String::new(),
                });
            ProbeView {
                position,
                commit,
                comparison_id: p.row.id,
                report_url: ctx.config.link(&format!("/comparisons/{}", p.row.id)),
                status: p.row.status,
                runs_per_side: p.row.runs_per_side,
                verdict: p.reading.map(|r| r.verdict),
                change: p.reading.and_then(|r| r.change),
                low: p.interval.map(|i| i.0),
                high: p.interval.map(|i| i.1),
                judgement: p.judgement,
                by_estimate: p.by_estimate,
                failure: p.failure,
            }
        })
        .collect();
    let params = &b.params.0;
    Ok(BisectionView {
        id: b.id,
        status: b.status,
        page_url: ctx.config.link(&format!("/bisections/{}", b.id)),
        submitted_by: b.submitted_by_name.clone(),
        created_at: b.created_at,
        finished_at: b.finished_at,
        base: b.base.0.without_credentials(),
        git_range: b.git_range.clone(),
        comparison_id: b.from_comparison_id,
        workload: b.workload.clone(),
        mode: params.mode,
        nr_task: params
            .nr_task
            .first()
            .map(ToString::to_string)
            .unwrap_or_default(),
        metric: b.metric.clone(),
        runs_per_side: b.runs_per_side,
        max_runs_per_side: b
            .asked
            .max_runs
            .map_or(b.runs_per_side, |n| i32::try_from(n).unwrap_or(i32::MAX)),
        machine,
        commits,
        probes,
        outcome: b.outcome.as_ref().map(|o| o.0.clone()),
    })
}
