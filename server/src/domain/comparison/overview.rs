//! What every view of one comparison shows, gathered once: the JSON answer
//! (`GET /api/v1/comparisons/{id}`), its page and the text report read the
//! same row, report, series, jobs and boots, so they never disagree.

use std::sync::Arc;

use patchperf_common::api::{StepOf, StepView};
use patchperf_common::mbox;

use crate::db::boots::BootRow;
/// A comparison as its views read it.
pub use crate::db::comparisons::ComparisonRow;
use crate::db::jobs::JobRow;
use crate::db::patches::PatchRow;
/// A run's per-second samples, as the plots draw them.
pub use crate::db::runs::PerSecondRow;
use crate::domain::comparison::failure::{self, Failure};
use crate::domain::report::{self, ComparisonReport};
use crate::domain::{Context, comparison::steps, jobs::waiting};
use crate::{Error, db};

/// Comparison `id` and its report; `NotFound` when there is none.
pub async fn find(ctx: &Context, id: i64) -> Result<(ComparisonRow, Arc<ComparisonReport>), Error> {
    let c = row(ctx, id).await?;
    let built = report::load_shared(ctx, &c).await?;
    Ok((c, built))
}

/// Comparison `id`'s row; `NotFound` when there is none.
pub async fn row(ctx: &Context, id: i64) -> Result<ComparisonRow, Error> {
    db::comparisons::find(&ctx.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))
}

/// The series comparison `c` measured, as its mbox was stored (or read
/// from its git range); empty when it boots the base kernel on both sides.
pub async fn mbox(ctx: &Context, c: &ComparisonRow) -> Result<String, Error> {
    Ok(db::patches::mbox(&ctx.db, c.series_id).await?.0)
}

/// The per-second series called `names` of comparison `id`'s runs.
pub async fn per_second(
    ctx: &Context,
    id: i64,
    names: &[String],
) -> Result<Vec<PerSecondRow>, Error> {
    Ok(db::runs::per_second(&ctx.db, id, names).await?)
}

/// On a bisection's probe: which bisection, which commit of how many.
#[derive(Debug, Clone, Copy)]
pub struct ProbeOf {
    /// The bisection.
    pub bisection_id: i64,
    /// The commit probed, 1-based.
    pub position: i32,
    /// Commits in the bisected series.
    pub of: usize,
}

/// Everything the views of one comparison show besides its report.
#[derive(Debug)]
pub struct Overview {
    /// The series' messages, in order.
    pub messages: Vec<PatchRow>,
    /// The series' sha256.
    pub series_sha256: String,
    /// Its jobs, in boot order.
    pub jobs: Vec<JobRow>,
    /// Its boots, in order.
    pub boots: Vec<BootRow>,
    /// Runs stored per job: (job, base, patched).
    pub run_counts: Vec<(i64, i64, i64)>,
    /// Runs a side it stores when every job is done, with those it
    /// borrows from its steps ([`expected_with_borrowed`]).
    pub expected_per_side: usize,
    /// What it waits for, when worth telling.
    pub waiting: Option<String>,
    /// What runs for it now and about how long is left.
    pub progress: Option<String>,
    /// Why it failed, when it did.
    pub failure: Option<Failure>,
    /// When its runs' per-second data was pruned (`domain::retention`).
    pub pruned_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Its steps, when measured patch by patch.
    pub steps: Vec<StepView>,
    /// On a step: its parent and position.
    pub step_of: Option<StepOf>,
    /// On a bisection's probe: the bisection.
    pub probe_of: Option<ProbeOf>,
    /// Built over a tracked tree's anchor: how many commits ride on it.
    pub carried_commits: Option<usize>,
    /// Whether its run length still waits for the mode of the machine
    /// that claims it ([`crate::domain::jobs::run_length`]).
    pub run_length_pending: bool,
}

/// Runs a side job `job` of comparison `c` stores when done: each of its
/// boots runs its workloads (all of the comparison's, or the undecided
/// ones for a boot added later) at every nr_task.
pub fn expected_runs(c: &ComparisonRow, job: &JobRow, boots: &[BootRow]) -> usize {
    let workloads = job
        .workloads
        .as_ref()
        .map_or(c.asked.workloads.len(), Vec::len);
    let boots = boots.iter().filter(|b| b.job_id == job.id).count();
    workloads * c.params.0.nr_task.len() * boots / 2
}

/// Runs a side comparison `c` stores when every job is done.
pub fn expected_per_side(c: &ComparisonRow, jobs: &[JobRow], boots: &[BootRow]) -> usize {
    jobs.iter().map(|j| expected_runs(c, j, boots)).sum()
}

/// Runs a side comparison `c` has when every job is done, its own and
/// those it borrows (a whole series from its first and last step: the
/// fewer of the two sides').
async fn expected_with_borrowed(
    ctx: &Context,
    c: &ComparisonRow,
    jobs: &[JobRow],
    boots: &[BootRow],
) -> Result<usize, Error> {
    let own = expected_per_side(c, jobs, boots);
    let mut lent: Option<usize> = None;
    for (_, from) in db::runs::borrowed_from(&ctx.db, c.id).await? {
        let Some(lender) = db::comparisons::find(&ctx.db, from).await? else {
            continue;
        };
        let theirs = expected_per_side(
            &lender,
            &db::jobs::for_comparison(&ctx.db, from).await?,
            &db::boots::for_comparison(&ctx.db, from).await?,
        );
        lent = Some(lent.map_or(theirs, |n| n.min(theirs)));
    }
    Ok(own + lent.unwrap_or(0))
}

/// What the views of comparison `c` show besides its report.
pub async fn gather(ctx: &Context, c: &ComparisonRow) -> Result<Overview, Error> {
    let probe_of = match db::comparisons::probe_of(&ctx.db, c.id).await? {
        None => None,
        Some((bisection_id, position)) => {
            let b = db::bisections::find(&ctx.db, bisection_id)
                .await?
                .ok_or_else(|| Error::Internal(format!("bisection {bisection_id} vanished")))?;
            let (series, _) = db::patches::mbox(&ctx.db, b.series_id).await?;
            Some(ProbeOf {
                bisection_id,
                position,
                of: mbox::prefix::count(&series),
            })
        }
    };
    let carried_commits = match c.carried_series_id {
        Some(carried) => Some(
            db::patches::messages(&ctx.db, carried)
                .await?
                .iter()
                .filter(|m| m.has_diff)
                .count(),
        ),
        None => None,
    };
    let jobs = db::jobs::for_comparison(&ctx.db, c.id).await?;
    let boots = db::boots::for_comparison(&ctx.db, c.id).await?;
    Ok(Overview {
        messages: db::patches::messages(&ctx.db, c.series_id).await?,
        series_sha256: db::patches::series_sha256(&ctx.db, c.series_id).await?,
        expected_per_side: expected_with_borrowed(ctx, c, &jobs, &boots).await?,
        boots,
        run_counts: db::runs::counts_per_job(&ctx.db, c.id).await?,
        waiting: waiting::note(&ctx.db, c).await?,
        progress: waiting::progress(&ctx.db, c, &jobs).await?,
        failure: failure::of(ctx, c).await?,
        jobs,
        pruned_at: db::retention::pruned_at(&ctx.db, c.id).await?,
        steps: steps::views(ctx, c).await?,
        step_of: steps::step_of(ctx, c).await?,
        probe_of,
        carried_commits,
        run_length_pending: db::run_lengths::is_pending(&ctx.db, c.id).await?,
    })
}
