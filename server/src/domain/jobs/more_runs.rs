//! More runs while undecided. When the last job of a comparison is done
//! and a report's headline verdict is still undecided (the interval is too
//! wide to call the change real or absent), the comparison gets more boots:
//! the runs a side double, up to the `max_runs` it was submitted with. The
//! new boots run only the workloads with an undecided cell (a decided one
//! keeps its runs and its verdict); they continue the comparison's seeded
//! block order, so the whole order is still the one its seed draws, and
//! they run on the same machine.
//!
//! Each look is another chance for noise to pass the test, so a comparison
//! that may grow spends its 5% level over the looks it may take
//! ([`patchperf_common::stats::looks`]): wider intervals and a smaller q
//! bound at each, which reports state; doubling keeps the looks few
//! (3 → 6 → 12 → 24 …).

use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::report::format;
use patchperf_common::stats::Verdict;
use sqlx::PgConnection;

use crate::domain::Context;
use crate::domain::{jobs::interleave, jobs::lifecycle, report};
use crate::{Error, db};

/// After a job of comparison `id` finished: more boots where a headline
/// is undecided, for `id` and then for the comparisons that borrow its
/// runs (a whole series taken from its steps grows once its last step has
/// settled, with its own boots of both kernels).
pub async fn after_finish(ctx: &Context, conn: &mut PgConnection, id: i64) -> Result<(), Error> {
    add_if_undecided(ctx, &mut *conn, id).await?;
    for borrower in db::comparisons::borrowers(&mut *conn, id).await? {
        add_if_undecided(ctx, &mut *conn, borrower).await?;
    }
    Ok(())
}

/// Adds boots to comparison `id` if it is done, may grow and a headline
/// verdict is undecided; returns the new runs a side when it did. Runs in
/// the transaction that finished its last job (the comparison row locked),
/// so nobody sees it done in between; the report is read from the stored,
/// committed runs.
pub async fn add_if_undecided(
    ctx: &Context,
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<i32>, Error> {
    let Some(c) = db::comparisons::find(&mut *conn, id).await? else {
        return Ok(None);
    };
    let Some(max) = c.asked.max_runs.and_then(|n| i32::try_from(n).ok()) else {
        return Ok(None);
    };
    if c.status != ComparisonStatus::Done || c.runs_per_side >= max {
        return Ok(None);
    }
    let built = report::load_shared(ctx, &c).await?;
    let now = c.runs_per_side;
    // Only cells measured by the latest boots can still move (a cell
    // decided before kept its runs): those with more runs than at the
    // look before.
    let before = c.runs_added_at.last().copied().unwrap_or(0);
    let latest = |g: &&report::GroupReport| {
        let n = g.comparison.base_runs.min(g.comparison.patched_runs);
        i32::try_from(n).unwrap_or(i32::MAX) > before
    };
    let undecided: Vec<(&str, String)> = built
        .groups
        .iter()
        .filter(latest)
        .filter_map(|g| {
            let m = g.comparison.headline_metric()?;
            (m.verdict == Verdict::Undecided).then(|| {
                let h = &g.comparison.header;
                let text = format!(
                    "{} nr_task {} {} ({} CI {})",
                    h.workload,
                    h.nr_task,
                    format::change_text(m),
                    g.comparison.policy.interval_label(),
                    format::interval_text(m)
                );
                (h.workload.as_str(), text)
            })
        })
        .collect();
    if undecided.is_empty() {
        return Ok(None);
    }
    let mut workloads: Vec<String> = Vec::new();
    for (w, _) in &undecided {
        if !workloads.iter().any(|known| known == w) {
            workloads.push((*w).to_string());
        }
    }
    let undecided: Vec<String> = undecided.into_iter().map(|(_, text)| text).collect();
    let runs = now.saturating_mul(2).min(max);
    let plan = interleave::plan(u32::try_from(runs).unwrap_or(0), c.order_seed as u64);
    let first = usize::try_from(now).unwrap_or(usize::MAX);
    let why = format!(
        "added: {now} runs a side left {} undecided; measuring {} at {runs} a side (at most \
         {max})",
        undecided.join(", "),
        workloads.join(", ")
    );
    let max_attempts = ctx.config.max_attempts;
    lifecycle::add_runs(
        conn,
        id,
        &plan,
        (first, runs),
        &workloads,
        max_attempts,
        &why,
    )
    .await?;
    tracing::info!(
        comparison = id,
        from = now,
        to = runs,
        "undecided: more runs added"
    );
    Ok(Some(runs))
}
