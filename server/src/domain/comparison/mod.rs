//! One home for a new comparison: [`queue`] stores one, whatever asked for
//! it — CI through the API, a tracked tree's new head, a bisection's probe,
//! the A/A that measures a machine's noise, a mailing list's series — with
//! its series, its jobs in interleaved boot order and, per
//! patch or per commit, its steps, inside the caller's transaction. What
//! asks builds an [`Order`] from its own request ([`submit`] for a
//! [`ComparisonSubmission`](patchperf_common::api::ComparisonSubmission));
//! the rules of storing it are here once. What its views show is gathered
//! in [`overview`], where it leads (which changes after it settled) in
//! [`links`]. A git range read into a series is [`range`]'s; the steps
//! of a per-patch comparison are listed by [`steps`]; comparisons are
//! listed, many at once, by [`listing`]; why a failed one failed is said
//! by [`failure`].

use patchperf_common::api::Setup;
use patchperf_common::comparison::ComparisonKind;
use patchperf_common::mbox::{self, Series};
use patchperf_common::protocol::{BaseSource, WorkloadParams};
use patchperf_common::run::Side;
use sqlx::PgConnection;

use crate::db::comparisons::NewComparison;
use crate::domain::{Context, jobs::interleave, jobs::lifecycle};
use crate::{Error, db};

pub mod failure;
pub mod links;
pub mod listing;
pub mod name;
pub mod overview;
pub mod range;
pub mod steps;
pub mod submit;

/// What asked for a comparison, and so how it relates to other things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// CI, through the API.
    Submitted,
    /// A tracked tree's new head.
    TreeHead {
        /// The tree.
        tree_id: i64,
    },
    /// A bisection's probe: the good end against patches 1..`position`.
    Probe {
        /// The bisection.
        bisection_id: i64,
        /// The commit probed, 1-based.
        position: i32,
    },
    /// The A/A comparison that measures a machine's noise.
    Calibration,
    /// A patch series posted to a mailing list: it queues behind
    /// submissions and calibrations ([`LIST_PRIORITY`]).
    ListSeries {
        /// The series version (`list_series`).
        series_id: i64,
    },
}

/// Claim priority of a list series' comparison and its steps: below CI's
/// (0) and a stale calibration's (-1), so a busy list never starves CI.
pub const LIST_PRIORITY: i16 = -2;

/// Commits the kernels carry over another commit than the base (a tracked
/// tree's anchor): the runner builds the base as `over` with the carried
/// series on it, and the patched side as that with the comparison's series.
#[derive(Debug, Clone)]
pub enum Carried {
    /// The carried commits as a series not stored yet (one message per
    /// commit, as `domain::comparison::range` writes them).
    New {
        /// The commit built over.
        over: String,
        /// `over..base`.
        mbox: String,
    },
    /// A series already stored (an A/A on the same kernels as its A/B).
    Stored {
        /// The commit built over.
        over: String,
        /// The stored series.
        series_id: i64,
    },
}

/// A comparison to queue, as checked by whatever asked for it.
#[derive(Debug, Clone)]
pub struct Order {
    /// What asked.
    pub origin: Origin,
    /// Base against patched, or base against itself.
    pub kind: ComparisonKind,
    /// The base tree.
    pub base: BaseSource,
    /// The series as mailed (a git range: one message per commit); empty
    /// for an A/A comparison.
    pub mbox: String,
    /// Whether each patch also gets its own step comparison.
    pub per_patch: bool,
    /// A git range's commits, one per patch of `mbox`, in order.
    pub commits: Vec<String>,
    /// A git range as resolved (`A..B`, full ids).
    pub git_range: Option<String>,
    /// The commit the patched side is (a range's end, a probe's commit).
    pub commit: Option<String>,
    /// What to measure and where: the workloads each known (the map's
    /// when none were asked), `max_runs` as it applies, the parameters as
    /// asked (a run length left out stays so until the mode is known).
    pub setup: Setup,
    /// The parameters measured with, the run length fixed (a wall-clock
    /// mode's while [`run_length_pending`](Self::run_length_pending)).
    pub params: WorkloadParams,
    /// The run length waits for the mode of the machine that claims the
    /// comparison ([`run_length`](crate::domain::jobs::run_length)).
    pub run_length_pending: bool,
    /// The machine it is pinned to (`setup.machine`), with its inventory now.
    pub machine: Option<(i64, serde_json::Value)>,
    /// Seed of the boot order.
    pub seed: u64,
    /// The token it is submitted by.
    pub submitted_by: i64,
    /// Built over another commit than the base.
    pub carried: Option<Carried>,
}

/// Stores `order` with its jobs (and its steps, per patch) in the caller's
/// transaction; the comparison's id. Waiting claims hear of the jobs once
/// the transaction commits.
pub async fn queue(
    conn: &mut PgConnection,
    order: &Order,
    max_attempts: u32,
) -> Result<i64, Error> {
    let series = match order.kind {
        ComparisonKind::Aa => Series::empty(),
        ComparisonKind::Ab => {
            mbox::parse(&order.mbox).map_err(|e| Error::Invalid(e.to_string()))?
        }
    };
    if order.per_patch {
        if let Some(why) = mbox::prefix::too_large(&order.mbox) {
            return Err(Error::Invalid(why));
        }
    }
    let series_id = db::patches::insert_series(&mut *conn, &order.mbox, &series).await?;
    let built_over = match &order.carried {
        None => None,
        Some(Carried::Stored { over, series_id }) => Some((over.as_str(), *series_id)),
        Some(Carried::New { over, mbox: text }) => {
            let parsed = mbox::parse(text)
                .map_err(|e| Error::Internal(format!("the carried commits: {e}")))?;
            let id = db::patches::insert_series(&mut *conn, text, &parsed).await?;
            Some((over.as_str(), id))
        }
    };
    let (probe_of, tree_id) = match order.origin {
        Origin::Probe {
            bisection_id,
            position,
        } => (Some((bisection_id, position)), None),
        Origin::TreeHead { tree_id } => (None, Some(tree_id)),
        Origin::Submitted | Origin::Calibration | Origin::ListSeries { .. } => (None, None),
    };
    let new = NewComparison {
        base: &order.base,
        series_id,
        kind: order.kind,
        setup: &order.setup,
        params: &order.params,
        machine: order.machine.clone(),
        order_seed: stored_seed(order.seed),
        submitted_by: order.submitted_by,
        step_of: None,
        base_series_id: None,
        git_range: order.git_range.clone(),
        commit_sha: order.commit.clone(),
        probe_of,
        tree_id,
        built_over,
    };
    // A series measured step by step needs no boots of its own: step 1
    // boots the base and the last step the whole series, so the whole
    // series' result is theirs (it boots both only to add runs while
    // undecided).
    let steps = order.per_patch && mbox::prefixes(&order.mbox).len() >= 2;
    let own_runs = if steps { 0 } else { order.setup.runs };
    let id = insert_with_jobs(conn, &new, order, (order.seed, own_runs), max_attempts).await?;
    if steps {
        let steps = queue_steps(conn, id, &new, order, max_attempts).await?;
        if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
            db::runs::borrow(&mut *conn, id, Side::Base, *first).await?;
            db::runs::borrow(&mut *conn, id, Side::Patched, *last).await?;
        }
    }
    if let Origin::ListSeries { .. } = order.origin {
        db::comparisons::set_family_priority(&mut *conn, id, LIST_PRIORITY).await?;
    }
    Ok(id)
}

/// Cancels comparison `id` for `by`: queued jobs fail as cancelled, running
/// ones learn it from their heartbeats.
pub async fn cancel(ctx: &Context, id: i64, by: &str) -> Result<(), Error> {
    let mut tx = ctx.db.begin().await?;
    lifecycle::cancel(&mut tx, id, by).await?;
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    // Settled as much as a finish: a list's slot frees now, not at the
    // reader's next poll.
    ctx.comparison_settled.notify_waiters();
    Ok(())
}

/// Postgres has no unsigned type: a seed is stored as the same 64 bits.
fn stored_seed(seed: u64) -> i64 {
    seed as i64
}

/// Stores `new` (of `order`) and queues `runs` blocks of jobs in the boot
/// order `seed` draws.
async fn insert_with_jobs(
    conn: &mut PgConnection,
    new: &NewComparison<'_>,
    order: &Order,
    (seed, runs): (u64, u32),
    max_attempts: u32,
) -> Result<i64, Error> {
    let id = db::comparisons::insert(&mut *conn, new).await?;
    if order.run_length_pending {
        db::run_lengths::insert_pending(&mut *conn, id, &order.setup.params).await?;
    }
    lifecycle::create_jobs(
        conn,
        id,
        &interleave::plan(runs, seed),
        0,
        max_attempts,
        None,
    )
    .await?;
    Ok(id)
}

/// The step comparisons of the per-patch comparison `parent_id` (stored as
/// `parent` from `order`), in order: step k boots patches 1..k-1 against
/// 1..k, an ordinary comparison with a parent and a position. A series of
/// fewer than two patches has none: its one step would be the whole series
/// again.
async fn queue_steps(
    conn: &mut PgConnection,
    parent_id: i64,
    parent: &NewComparison<'_>,
    order: &Order,
    max_attempts: u32,
) -> Result<Vec<i64>, Error> {
    let prefixes = mbox::prefixes(&order.mbox);
    if prefixes.len() < 2 {
        return Ok(Vec::new());
    }
    let mut ids = Vec::with_capacity(prefixes.len());
    let mut base_series_id = None;
    for (index, prefix) in prefixes.iter().enumerate() {
        let series = mbox::parse(prefix)
            .map_err(|e| Error::Internal(format!("patches 1..{} of the series: {e}", index + 1)))?;
        let series_id = db::patches::insert_series(&mut *conn, prefix, &series).await?;
        // Each step draws its own boot order, reproducibly from the parent's.
        let seed = order.seed.wrapping_add(index as u64 + 1);
        let new = NewComparison {
            series_id,
            base_series_id,
            step_of: Some((parent_id, i32::try_from(index + 1).unwrap_or(i32::MAX))),
            order_seed: stored_seed(seed),
            commit_sha: order.commits.get(index).cloned(),
            git_range: None,
            probe_of: None,
            ..parent.clone()
        };
        let runs = order.setup.runs;
        ids.push(insert_with_jobs(conn, &new, order, (seed, runs), max_attempts).await?);
        base_series_id = Some(series_id);
    }
    Ok(ids)
}
