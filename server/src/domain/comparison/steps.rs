//! Per-patch comparisons: a series of N ≥ 2 patches measured step by step.
//! The whole-series comparison (the parent) gets N step comparisons, step k
//! booting patches 1..k-1 against patches 1..k; each step is an ordinary
//! comparison (its own jobs, runs, stored report and verdict) with a parent
//! and a position, queued with its parent by
//! [`crate::domain::comparison::queue`]. The parent boots nothing of its
//! own: it borrows step 1's base runs and step N's patched runs
//! ([`crate::db::runs::borrow`]), is done when they are
//! ([`crate::db::comparisons::refresh_status`]) and boots both kernels
//! only to add runs while undecided. Here: the parent's `report.txt`,
//! each report naming the step that moved it; what the parent shows of
//! its steps is [`crate::domain::report::steps`]'. The queue runs a
//! family's steps in order before the parent
//! ([`crate::db::jobs::next_claimable`]) on one machine
//! ([`crate::db::comparisons::pin`]); a step whose patch does not
//! apply or build fails the steps after it and the parent
//! ([`crate::domain::jobs::lifecycle::finish_failed`]).

use crate::Error;
use crate::db::comparisons::ComparisonRow;
use crate::domain::Context;
use crate::domain::comparison::failure;
use crate::domain::report;
use crate::domain::report::verdict;

pub use crate::domain::report::steps::{step_of, views};

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
    let steps = views(ctx, c).await?;
    let url = report_url.map_or_else(
        || ctx.config.link(&format!("/comparisons/{}", c.id)),
        str::to_string,
    );
    let reports = if steps.is_empty() {
        match report_url {
            Some(url) => verdict::text_report_linking(&built, Some(url)),
            None => verdict::text(ctx, c).await?.to_string(),
        }
    } else {
        verdict::text_report_linking(&report::steps::with_culprits(&built, &steps), Some(&url))
    };
    let mut out = match failure::of(ctx, c).await? {
        // Nothing measured: the failure is the whole answer.
        Some(f) if built.groups.is_empty() => f.text(false, &url),
        Some(f) => format!("{}\n{reports}", f.text(true, &url)),
        None => reports,
    };
    if !steps.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&report::steps_text::steps_table(&steps));
    }
    Ok(out)
}
