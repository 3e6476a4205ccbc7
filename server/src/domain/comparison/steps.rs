//! Per-patch comparisons: a series of N ≥ 2 patches measured step by step.
//! The whole-series comparison (the parent) gets N step comparisons, step k
//! booting patches 1..k-1 against patches 1..k; each step is an ordinary
//! comparison (its own jobs, runs, stored report and verdict) with a parent
//! and a position, queued with its parent by
//! [`crate::domain::comparison::queue`]. The parent boots nothing of its
//! own: it borrows step 1's base runs and step N's patched runs
//! ([`crate::db::runs::borrow`]), is done when they are
//! ([`crate::db::comparisons::refresh_status`]) and boots both kernels
//! only to add runs while undecided. Here: what the parent shows of
//! them. The queue runs a family's steps in order before the parent
//! ([`crate::db::jobs::next_claimable`]) on one machine
//! ([`crate::db::comparisons::pin`]); a step whose patch does not
//! apply or build fails the steps after it and the parent
//! ([`crate::domain::jobs::lifecycle::finish_failed`]).

use patchperf_common::api::{StepHeadline, StepOf, StepView};

use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::domain::comparison::failure;
use crate::domain::report;
use crate::domain::report::verdict::{self, verdict_view};
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

/// Lives here, not in `report::verdict`, which `views` reads: one way
/// between the two modules.
/// Comparison `c`'s `report.txt`: why it failed when it did
/// ([`failure`]), its reports, each `report:` line set to `report_url`
/// when one is given, then for a per-patch comparison the patch-by-patch
/// table of its steps (read afresh: a step may settle after the whole
/// series' report was built).
pub async fn report_txt(
    ctx: &Context,
    c: &ComparisonRow,
    report_url: Option<&str>,
) -> Result<String, Error> {
    let built = report::load_shared(ctx, c).await?;
    let reports = match report_url {
        Some(url) => verdict::text_report_linking(&built, Some(url)),
        None => verdict::text(ctx, c).await?.to_string(),
    };
    let url = report_url.map_or_else(
        || ctx.config.link(&format!("/comparisons/{}", c.id)),
        str::to_string,
    );
    let mut out = match failure::of(ctx, c).await? {
        // Nothing measured: the failure is the whole answer.
        Some(f) if built.groups.is_empty() => f.text(false, &url),
        Some(f) => format!("{}\n{reports}", f.text(true, &url)),
        None => reports,
    };
    let steps = views(ctx, c).await?;
    if !steps.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&report::steps_text::steps_table(&steps));
    }
    Ok(out)
}
