//! What a per-patch comparison shows of its steps, read from their own
//! reports: each step's patch, status, verdict and headlines
//! ([`views`]), which patch a step is ([`step_of`]), and the parent's
//! reports each naming the step that moved it ([`with_culprits`],
//! [`patchperf_common::report::culprit`]'s rule). Here, in the report
//! builder's home, because the dashboard's stored headline of a parent
//! names its culprit too ([`super::stored`]).

use patchperf_common::api::{StepHeadline, StepOf, StepView};
use patchperf_common::report::culprit;

use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::domain::comparison::failure;
use crate::domain::report::verdict::verdict_view;
use crate::domain::report::{self, ComparisonReport};
use crate::{Error, db};

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
        // A range's (or tree push's) step is its commit; a mailed
        // series' step has none.
        commit: c.commit_sha.clone(),
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
        let report = report::load_shared(ctx, &row).await?;
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
        let failure = failure::of(ctx, &row).await?.map(|f| f.words.line);
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

/// `report` with each report naming the step that moved its headline
/// ([`culprit::moved_by`]) in [`culprit::step_words`].
pub fn with_culprits(report: &ComparisonReport, steps: &[StepView]) -> ComparisonReport {
    let mut named = report.clone();
    for g in &mut named.groups {
        g.comparison.header.moved_by =
            culprit::moved_by(&g.comparison, steps).map(|s| culprit::step_words(s, steps.len()));
    }
    named
}
