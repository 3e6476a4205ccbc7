//! `comparisons`: what was asked to compare, and its overall status. The
//! row itself is here; the listing, the calibration queries and a
//! comparison's family (steps, probes) each have a module of their own.

mod calibration;
mod family;
mod listing;

pub use self::calibration::{
    AaOfMachine, FinishedAa, aas_of_machine, calibration_of, finished_aas, has_calibration,
    latest_aa, mark_calibration, set_family_priority,
};
pub use self::family::{
    ProbeRow, StepRow, after_step, probe_of, probes, started, step_count, steps,
};
pub use self::listing::{ComparisonSummary, ListFilter, ListOrder, list};

use chrono::{DateTime, Utc};
use patchperf_common::api::Setup;
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::protocol::{BaseSource, WorkloadParams};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// A new comparison, validated.
#[derive(Debug, Clone)]
pub struct NewComparison<'a> {
    /// Base tree.
    pub base: &'a BaseSource,
    /// Stored patch series (the empty one for an A/A comparison).
    pub series_id: i64,
    /// Base against patched, or base against itself.
    pub kind: ComparisonKind,
    /// What to measure and where: workloads, runs, backend, Kconfig
    /// fragment, pool (the machine is `machine`, resolved).
    pub setup: &'a Setup,
    /// Parameters measured with.
    pub params: &'a WorkloadParams,
    /// Machine pinned at submission, with its inventory snapshot.
    pub machine: Option<(i64, serde_json::Value)>,
    /// Seed of the boot order.
    pub order_seed: i64,
    /// Token that submitted it.
    pub submitted_by: i64,
    /// For a step of a per-patch comparison: the whole-series comparison
    /// and the step's position in it.
    pub step_of: Option<(i64, i32)>,
    /// Patches the base kernel carries (a step's patches 1..k-1).
    pub base_series_id: Option<i64>,
    /// A git range's comparison: the range as resolved (`A..B`, full ids).
    pub git_range: Option<String>,
    /// The commit the patched side's tree is (a step's, or the range's end).
    pub commit_sha: Option<String>,
    /// For a bisection's probe: the bisection and the commit's position.
    pub probe_of: Option<(i64, i32)>,
    /// For a tracked tree's new head: the tree.
    pub tree_id: Option<i64>,
    /// Built over another commit than its base: that commit, and the
    /// series that takes it to the base (see [`ComparisonRow::built_over`]).
    pub built_over: Option<(&'a str, i64)>,
}

/// A comparison as stored, with its machine's name.
#[derive(Debug, Clone)]
pub struct ComparisonRow {
    /// Row id.
    pub id: i64,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// Base tree.
    pub base: Json<BaseSource>,
    /// Patch series id.
    pub series_id: i64,
    /// Base against patched, or base against itself.
    pub kind: ComparisonKind,
    /// What it measures and where, as asked (its workloads resolved);
    /// [`ComparisonRow::setup`] is as in effect.
    pub asked: Json<Setup>,
    /// Parameters measured with (the run length fixed once a machine
    /// claims it).
    pub params: Json<WorkloadParams>,
    /// Boots per side (more once boots were added while undecided).
    pub runs_per_side: i32,
    /// The boots a side at which more were added, in order.
    pub runs_added_at: Vec<i32>,
    /// Pinned machine.
    pub machine_id: Option<i64>,
    /// Pinned machine's name.
    pub machine_name: Option<String>,
    /// Pinned machine's inventory at pin time.
    pub machine_inventory: Option<serde_json::Value>,
    /// Seed of the boot order.
    pub order_seed: i64,
    /// Name of the submitting token.
    pub submitted_by: String,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// When it became done, failed or cancelled.
    pub finished_at: Option<DateTime<Utc>>,
    /// For a step of a per-patch comparison: the whole-series comparison.
    pub parent_id: Option<i64>,
    /// For a step: which patch of the series it measures (1-based).
    pub step: Option<i32>,
    /// Patches the base kernel carries (a step's patches 1..k-1).
    pub base_series_id: Option<i64>,
    /// A git range's comparison: the range as resolved (`A..B`, full ids).
    pub git_range: Option<String>,
    /// The commit the patched side's tree is (a step's, or the range's end).
    pub commit_sha: Option<String>,
    /// The tracked tree whose new head it measures.
    pub tree_id: Option<i64>,
    /// The commit the runner builds both sides over when it is not the
    /// base's (a tracked tree's anchor): the base is this commit with
    /// `carried_series_id` on it, the patched side that and the series.
    pub built_over: Option<String>,
    /// The commits from `built_over` to the base, as a series.
    pub carried_series_id: Option<i64>,
}

impl ComparisonRow {
    /// What it measures and where, as in effect: its workloads, the
    /// parameters measured with, the runs a side now.
    pub fn setup(&self) -> Setup {
        crate::db::setup::in_effect(
            &self.asked,
            &self.params,
            self.runs_per_side,
            self.machine_name.clone(),
        )
    }

    /// The runs a side at each look when boots were added while undecided,
    /// then the current count (`[3, 6, 12]`); empty when none were added.
    pub fn runs_steps(&self) -> Vec<u32> {
        if self.runs_added_at.is_empty() {
            return Vec::new();
        }
        self.runs_added_at
            .iter()
            .chain([&self.runs_per_side])
            .map(|&n| u32::try_from(n).unwrap_or(0))
            .collect()
    }
}

/// Stores a comparison; returns its id.
pub async fn insert(conn: &mut PgConnection, new: &NewComparison<'_>) -> Result<i64, sqlx::Error> {
    let (machine_id, inventory) = match &new.machine {
        Some((id, inv)) => (Some(*id), Some(inv.clone())),
        None => (None, None),
    };
    let (parent_id, step) = new.step_of.unzip();
    let (bisection_id, probe) = new.probe_of.unzip();
    let (built_over, carried_series_id) = new.built_over.unzip();
    sqlx::query_scalar!(
        r#"INSERT INTO comparisons (base, series_id, setup, params, runs_per_side, machine_id,
                                    machine_inventory, order_seed, submitted_by, kind, parent_id,
                                    step, base_series_id, git_range, commit_sha, bisection_id,
                                    probe, tree_id, built_over, carried_series_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                   $17, $18, $19, $20)
           RETURNING id"#,
        Json(new.base) as _,
        new.series_id,
        crate::db::setup::stored(new.setup) as _,
        Json(new.params) as _,
        i32::try_from(new.setup.runs).unwrap_or(i32::MAX),
        machine_id,
        inventory,
        new.order_seed,
        new.submitted_by,
        new.kind.as_str(),
        parent_id,
        step,
        new.base_series_id,
        new.git_range,
        new.commit_sha,
        bisection_id,
        probe,
        new.tree_id,
        built_over,
        carried_series_id
    )
    .fetch_one(conn)
    .await
}

/// The comparison with this id.
pub async fn find(db: impl PgExecutor<'_>, id: i64) -> Result<Option<ComparisonRow>, sqlx::Error> {
    sqlx::query_as!(
        ComparisonRow,
        r#"SELECT c.id, c.status AS "status: ComparisonStatus",
                  c.base AS "base: Json<BaseSource>", c.series_id,
                  c.kind AS "kind: ComparisonKind",
                  c.setup AS "asked!: Json<Setup>",
                  c.params AS "params: Json<WorkloadParams>", c.runs_per_side,
                  c.runs_added_at, c.machine_id, m.name AS "machine_name?",
                  c.machine_inventory, c.order_seed, t.name AS submitted_by,
                  c.created_at, c.updated_at, c.finished_at, c.parent_id, c.step,
                  c.base_series_id, c.git_range, c.commit_sha, c.tree_id,
                  c.built_over, c.carried_series_id
           FROM comparisons c
           JOIN tokens t ON t.id = c.submitted_by
           LEFT JOIN machines m ON m.id = c.machine_id
           WHERE c.id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// The comparisons not final whose boots must all come from machine
/// `machine_id` (pinned by a claim, or named at submission): the
/// stand-alone ones and the parents of per-patch ones, locked.
pub async fn unfinished_on(
    conn: &mut PgConnection,
    machine_id: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM comparisons
         WHERE machine_id = $1 AND parent_id IS NULL AND status IN ('queued', 'running')
         ORDER BY id FOR UPDATE",
        machine_id
    )
    .fetch_all(conn)
    .await
}

/// Pins comparison `id` and its per-patch family to machine `machine_id`
/// (those not pinned yet). With `start`, as the first claim of one of them
/// does, every member is pinned and the claimed one and its parent are
/// marked running: the parent and every step run on the machine that
/// claims the first of them (each step's patched kernel is the next one's
/// base kernel in that machine's cache), and the parent runs while its
/// steps do. Without, as a calibration queued on that machine for it does,
/// nothing starts: the machine calibrated for the comparison is the one
/// that runs it.
pub async fn pin(
    conn: &mut PgConnection,
    id: i64,
    machine_id: i64,
    inventory: serde_json::Value,
    start: bool,
) -> Result<(), sqlx::Error> {
    let family = sqlx::query_scalar!(
        "WITH claimed AS (SELECT id, COALESCE(parent_id, id) AS family
                          FROM comparisons WHERE id = $1)
         UPDATE comparisons c
         SET machine_id = COALESCE(c.machine_id, $2),
             machine_inventory = COALESCE(c.machine_inventory, $3),
             status = CASE WHEN $4 AND c.status = 'queued'
                                AND (c.id = claimed.id OR c.id = claimed.family)
                           THEN 'running' ELSE c.status END,
             updated_at = now()
         FROM claimed
         WHERE (c.id = claimed.family OR c.parent_id = claimed.family)
           AND ($4 OR c.machine_id IS NULL)
         RETURNING c.id",
        id,
        machine_id,
        inventory,
        start
    )
    .fetch_all(&mut *conn)
    .await?;
    for pinned in family {
        super::reports::mark_stale(conn, pinned).await?;
    }
    Ok(())
}

/// The token that submitted comparison `id`.
pub async fn submitter(conn: &mut PgConnection, id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!("SELECT submitted_by FROM comparisons WHERE id = $1", id)
        .fetch_one(conn)
        .await
}

/// Locks the comparison row for the rest of the transaction; returns its
/// status.
pub async fn lock(
    conn: &mut PgConnection,
    id: i64,
) -> Result<Option<ComparisonStatus>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT status AS "status: ComparisonStatus" FROM comparisons WHERE id = $1 FOR UPDATE"#,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Recomputes the status from the jobs (a cancelled comparison stays
/// cancelled): done when every job is done, failed when every job is final
/// and one failed, running once any job left the queue. The jobs are the
/// comparison's own and those of the comparisons it borrows runs from
/// (`borrowed_runs`): a whole series taken from its steps is done when they
/// are. Returns whether this made an A/A comparison done, which changes its
/// machine's noise floor.
pub async fn refresh_status(conn: &mut PgConnection, id: i64) -> Result<bool, sqlx::Error> {
    let aa_done = sqlx::query_scalar!(
        r#"UPDATE comparisons c
           SET status = s.status,
               updated_at = now(),
               finished_at = CASE WHEN s.status IN ('done', 'failed')
                                  THEN COALESCE(c.finished_at, now()) END
           FROM (SELECT CASE
                          WHEN bool_and(state = 'done') THEN 'done'
                          WHEN bool_and(state IN ('done', 'failed')) THEN 'failed'
                          WHEN bool_or(state <> 'queued') THEN 'running'
                          ELSE 'queued'
                        END AS status
                 FROM jobs
                 WHERE comparison_id = ANY (ARRAY(
                     SELECT $1::bigint
                     UNION ALL
                     SELECT from_comparison_id FROM borrowed_runs WHERE comparison_id = $1))) s,
                (SELECT status FROM comparisons WHERE id = $1) before
           WHERE c.id = $1 AND c.status <> 'cancelled'
           RETURNING c.kind = 'aa' AND s.status = 'done' AND before.status <> 'done' AS "aa_done!""#,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    super::reports::mark_stale(conn, id).await?;
    Ok(aa_done.unwrap_or(false))
}

/// The comparisons that borrow runs from comparison `id` (a whole series
/// from its first and last step).
pub async fn borrowers(db: impl PgExecutor<'_>, id: i64) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT DISTINCT comparison_id FROM borrowed_runs WHERE from_comparison_id = $1",
        id
    )
    .fetch_all(db)
    .await
}

/// Raises the boots a side to `runs` (more were added while undecided),
/// recording the number they were added at.
pub async fn add_runs(conn: &mut PgConnection, id: i64, runs: i32) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons
         SET runs_added_at = runs_added_at || runs_per_side, runs_per_side = $2,
             updated_at = now()
         WHERE id = $1",
        id,
        runs
    )
    .execute(&mut *conn)
    .await?;
    super::reports::mark_stale(conn, id).await
}

/// Marks the comparison cancelled.
pub async fn cancel(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET status = 'cancelled', updated_at = now(), finished_at = now()
         WHERE id = $1",
        id
    )
    .execute(&mut *conn)
    .await?;
    super::reports::mark_stale(conn, id).await
}

/// How many comparisons are in each status (statuses with none are left
/// out).
pub async fn count_by_status(db: impl PgExecutor<'_>) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT status AS "status!", count(*) AS "n!" FROM comparisons GROUP BY status"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.status, r.n)).collect())
}

/// Stores the parameters comparison `id` is measured with.
pub async fn set_params(
    conn: &mut PgConnection,
    id: i64,
    params: &WorkloadParams,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET params = $2, updated_at = now() WHERE id = $1",
        id,
        Json(params) as _
    )
    .execute(conn)
    .await?;
    Ok(())
}
