//! `comparisons`: what CI asked to compare, and its overall status.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use patchperf_common::protocol::{BaseSource, WorkloadParams};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor, PgPool};

/// A new comparison, validated.
#[derive(Debug, Clone)]
pub struct NewComparison<'a> {
    /// Base tree.
    pub base: &'a BaseSource,
    /// Stored patch series (the empty one for an A/A comparison).
    pub series_id: i64,
    /// Base against patched, or base against itself.
    pub kind: ComparisonKind,
    /// Workload names, each known.
    pub workloads: &'a [String],
    /// Parameters.
    pub params: &'a WorkloadParams,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Most boots a side when more are added while undecided.
    pub max_runs_per_side: Option<i32>,
    /// Requested measurement mode spelling.
    pub backend: Option<&'a str>,
    /// Extra Kconfig lines.
    pub config_fragment: Option<&'a str>,
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
    /// Workload names.
    pub workloads: Vec<String>,
    /// Parameters.
    pub params: Json<WorkloadParams>,
    /// Boots per side (more once boots were added while undecided).
    pub runs_per_side: i32,
    /// Most boots a side when more are added while undecided.
    pub max_runs_per_side: Option<i32>,
    /// The boots a side at which more were added, in order.
    pub runs_added_at: Vec<i32>,
    /// Requested measurement mode.
    pub backend: Option<String>,
    /// Extra Kconfig lines.
    pub config_fragment: Option<String>,
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
        r#"INSERT INTO comparisons (base, series_id, workloads, params, runs_per_side, backend,
                                    config_fragment, machine_id, machine_inventory, order_seed,
                                    submitted_by, kind, max_runs_per_side, parent_id, step,
                                    base_series_id, git_range, commit_sha, bisection_id, probe,
                                    tree_id, built_over, carried_series_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                   $17, $18, $19, $20, $21, $22, $23)
           RETURNING id"#,
        Json(new.base) as _,
        new.series_id,
        new.workloads,
        Json(new.params) as _,
        new.runs_per_side,
        new.backend,
        new.config_fragment,
        machine_id,
        inventory,
        new.order_seed,
        new.submitted_by,
        new.kind.as_str(),
        new.max_runs_per_side,
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
                  c.workloads,
                  c.params AS "params: Json<WorkloadParams>", c.runs_per_side,
                  c.max_runs_per_side, c.runs_added_at, c.backend,
                  c.config_fragment, c.machine_id, m.name AS "machine_name?",
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

/// The latest finished A/A comparison of a machine, if any.
pub async fn latest_aa(
    db: impl PgExecutor<'_>,
    machine_id: i64,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM comparisons
         WHERE machine_id = $1 AND kind = 'aa' AND status = 'done'
         ORDER BY id DESC LIMIT 1",
        machine_id
    )
    .fetch_optional(db)
    .await
}

/// A finished A/A comparison, as calibration reads it.
#[derive(Debug, Clone)]
pub struct FinishedAa {
    /// Its id.
    pub id: i64,
    /// When it finished.
    pub finished_at: DateTime<Utc>,
    /// The machine as it was when the A/A comparison was first claimed.
    pub machine_inventory: Option<serde_json::Value>,
}

/// A machine's `limit` last finished A/A comparisons, the last to finish
/// first (a recalibration queued behind other work may finish after an A/A
/// queued later).
pub async fn finished_aas(
    db: impl PgExecutor<'_>,
    machine_id: i64,
    limit: i64,
) -> Result<Vec<FinishedAa>, sqlx::Error> {
    sqlx::query_as!(
        FinishedAa,
        r#"SELECT id, coalesce(finished_at, updated_at) AS "finished_at!", machine_inventory
           FROM comparisons
           WHERE machine_id = $1 AND kind = 'aa' AND status = 'done'
           ORDER BY coalesce(finished_at, updated_at) DESC, id DESC LIMIT $2"#,
        machine_id,
        limit
    )
    .fetch_all(db)
    .await
}

/// An A/A comparison of a machine that is done or still to run, as
/// calibration asks whether one measures a kind of run.
#[derive(Debug, Clone)]
pub struct AaOfMachine {
    /// Its id.
    pub id: i64,
    /// Done, or queued or running.
    pub status: ComparisonStatus,
    /// What it measures.
    pub workloads: Vec<String>,
    /// With which parameters.
    pub params: Json<WorkloadParams>,
    /// Requested measurement mode; `None` lets the runner choose.
    pub backend: Option<String>,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// The machine as it was when the A/A comparison was first claimed.
    pub machine_inventory: Option<serde_json::Value>,
}

/// A machine's A/A comparisons still to run and its `limit` last finished
/// ones (the ones [`finished_aas`] returns), newest first.
pub async fn aas_of_machine(
    conn: &mut PgConnection,
    machine_id: i64,
    limit: i64,
) -> Result<Vec<AaOfMachine>, sqlx::Error> {
    sqlx::query_as!(
        AaOfMachine,
        r#"SELECT id, status AS "status: ComparisonStatus", workloads,
                  params AS "params: Json<WorkloadParams>", backend, finished_at,
                  machine_inventory
           FROM comparisons
           WHERE machine_id = $1 AND kind = 'aa'
             AND (status IN ('queued', 'running')
                  OR id IN (SELECT id FROM comparisons
                            WHERE machine_id = $1 AND kind = 'aa' AND status = 'done'
                            ORDER BY coalesce(finished_at, updated_at) DESC, id DESC
                            LIMIT $2))
           ORDER BY id DESC"#,
        machine_id,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Pins comparison `id` (with its per-patch family) to machine `machine_id`
/// without starting it, as a calibration queued on that machine for it does:
/// the machine calibrated for the comparison is the one that runs it.
pub async fn pin(
    conn: &mut PgConnection,
    id: i64,
    machine_id: i64,
    inventory: serde_json::Value,
) -> Result<(), sqlx::Error> {
    let family = sqlx::query_scalar!(
        "WITH claimed AS (SELECT COALESCE(parent_id, id) AS family
                          FROM comparisons WHERE id = $1)
         UPDATE comparisons c
         SET machine_id = COALESCE(c.machine_id, $2),
             machine_inventory = COALESCE(c.machine_inventory, $3),
             updated_at = now()
         FROM claimed
         WHERE (c.id = claimed.family OR c.parent_id = claimed.family)
           AND c.machine_id IS NULL
         RETURNING c.id",
        id,
        machine_id,
        inventory
    )
    .fetch_all(&mut *conn)
    .await?;
    for pinned in family {
        super::reports::mark_stale(conn, pinned).await?;
    }
    Ok(())
}

/// Whether an A/A comparison was ever queued to calibrate for comparison
/// `id` (whatever became of it).
pub async fn has_calibration(conn: &mut PgConnection, id: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM comparisons WHERE calibrates = $1) AS "exists!""#,
        id
    )
    .fetch_one(conn)
    .await
}

/// The token that submitted comparison `id`.
pub async fn submitter(conn: &mut PgConnection, id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!("SELECT submitted_by FROM comparisons WHERE id = $1", id)
        .fetch_one(conn)
        .await
}

/// Marks A/A comparison `id` as the calibration comparison `of` asked for,
/// claimed with `priority` (1 before other work, -1 after).
pub async fn mark_calibration(
    conn: &mut PgConnection,
    id: i64,
    of: i64,
    priority: i16,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET calibrates = $2, priority = $3 WHERE id = $1",
        id,
        of,
        priority
    )
    .execute(conn)
    .await?;
    Ok(())
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

/// Filters of the comparison listing; `None` means any.
#[derive(Debug, Clone, Default)]
pub struct ListFilter<'a> {
    /// Status equals.
    pub status: Option<ComparisonStatus>,
    /// Pinned to the machine with this name.
    pub machine: Option<&'a str>,
    /// Runs this workload.
    pub workload: Option<&'a str>,
    /// Stored overall verdict equals (finished comparisons only; see
    /// [`super::verdicts`]).
    pub verdict: Option<OverallVerdict>,
    /// Only ids below this (the cursor of the previous page, newest first).
    pub before: Option<i64>,
    /// Only ids above this (the cursor of the previous page, oldest first).
    pub after: Option<i64>,
    /// In which order.
    pub order: ListOrder,
    /// A patch of its series has this in its subject or author (any case),
    /// or this Message-Id.
    pub search: Option<&'a str>,
    /// Matching comparisons skipped first (a page number's).
    pub offset: i64,
    /// Page size.
    pub limit: i64,
}

/// The order of the comparison listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Newest first.
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// Worst verdict first ([`OverallVerdict::ALL`]'s order; those not
    /// finished among the undecided), newest first within each.
    Verdict,
}

impl ListOrder {
    /// Every order, as `?sort=` names them.
    pub const ALL: &'static [ListOrder] =
        &[ListOrder::Newest, ListOrder::Oldest, ListOrder::Verdict];

    /// As `?sort=` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrder::Newest => "newest",
            ListOrder::Oldest => "oldest",
            ListOrder::Verdict => "verdict",
        }
    }
}

/// One line of the comparison listing.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ComparisonSummary {
    /// Comparison id.
    pub id: i64,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// Base tree.
    pub base: Json<BaseSource>,
    /// First patch's subject.
    pub subject: Option<String>,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Pinned machine's name.
    pub machine: Option<String>,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// Overall verdict (regression, improvement, no change, undecided, no
    /// results) once the comparison is final; `null` while it runs (its own
    /// `GET` has the live verdict) and for a moment after it ends.
    pub verdict: Option<OverallVerdict>,
    /// Each report's headline metric, change and verdict, with the verdict.
    pub headline: Option<String>,
}

/// Comparisons matching `filter` in its order; the steps of per-patch
/// comparisons are left out (their parent lists them).
///
/// Each order's keys are `CASE`s on the order asked for, which a plan made
/// for the values at hand folds away: newest and oldest first walk the
/// primary key's index, the verdict order `comparisons_verdict_rank`. The
/// subject is looked up for the page's rows only, not for those a page
/// number skips (page 1000 took 140 ms at 10⁵ comparisons, now 15).
///
/// A search is asked of each comparison, newest first, until the page is
/// full (`EXISTS`), not by first collecting every matching patch: a common
/// word matches thousands of patches (277 ms at 10⁵ comparisons), the
/// newest page of them takes under 1 ms; a term no trigram narrows and
/// nothing matches reads every comparison (180 ms at 10⁵, load 6).
///
/// Planned for the filter values at hand: a prepared statement soon gets a
/// generic plan, in which `$5 IS NULL OR c.verdict = $5` cannot use the
/// verdict index and a rare verdict means walking every comparison (26 ms
/// at 10⁵ of them, against 0.1 ms planned with the value).
pub async fn list(
    db: &PgPool,
    filter: &ListFilter<'_>,
) -> Result<Vec<ComparisonSummary>, sqlx::Error> {
    let search = filter.search.map(Search::new);
    let mut tx = db.begin().await?;
    sqlx::query!("SET LOCAL plan_cache_mode = force_custom_plan")
        .execute(&mut *tx)
        .await?;
    let listed = sqlx::query_as!(
        ComparisonSummary,
        r#"SELECT l.id AS "id!", l.status AS "status!: ComparisonStatus",
                  l.base AS "base!: Json<BaseSource>",
                  (SELECT p.subject FROM patches p
                   WHERE p.series_id = l.series_id AND p.has_diff
                   ORDER BY p.position LIMIT 1) AS subject,
                  l.workloads AS "workloads!", l.runs_per_side AS "runs_per_side!",
                  l.machine AS "machine?", l.created_at AS "created_at!",
                  l.verdict AS "verdict?: OverallVerdict", l.headline AS "headline?"
           FROM (SELECT c.id, c.status, c.base, c.series_id, c.workloads, c.runs_per_side,
                        m.name AS machine, c.created_at, c.verdict, c.headline,
                        CASE WHEN $10 = 'verdict' THEN verdict_rank(c.verdict) END AS rank,
                        CASE WHEN $10 = 'oldest' THEN c.id END AS oldest
                 FROM comparisons c
                 LEFT JOIN machines m ON m.id = c.machine_id
                 WHERE c.parent_id IS NULL AND c.bisection_id IS NULL
                   AND ($1::text IS NULL OR c.status = $1)
                   AND ($2::text IS NULL OR m.name = $2)
                   AND ($3::text IS NULL OR $3 = ANY (c.workloads))
                   AND ($4::bigint IS NULL OR c.id < $4)
                   AND ($11::bigint IS NULL OR c.id > $11)
                   AND ($5::text IS NULL OR c.verdict = $5)
                   AND ($8::text IS NULL OR EXISTS (
                         SELECT 1 FROM patches p
                         WHERE p.series_id = c.series_id
                           AND (p.message_id = $8 OR lower(p.subject) LIKE $9
                                OR lower(p.author) LIKE $9)))
                 ORDER BY rank, oldest, c.id DESC
                 LIMIT $6 OFFSET $7) l
           ORDER BY l.rank, l.oldest, l.id DESC"#,
        filter.status.map(ComparisonStatus::as_str),
        filter.machine,
        filter.workload,
        filter.before,
        filter.verdict.map(OverallVerdict::as_str),
        filter.limit,
        filter.offset,
        search.as_ref().map(|s| s.message_id.as_str()),
        search.as_ref().map(|s| s.pattern.as_str()),
        filter.order.as_str(),
        filter.after
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(listed)
}

/// A search term as the listing's query uses it.
struct Search {
    /// As a Message-Id: without the angle brackets stored ids lack.
    message_id: String,
    /// As part of a subject or an author: `%term%`, lower case, with
    /// LIKE's wildcards in the term matched as themselves.
    pattern: String,
}

impl Search {
    fn new(term: &str) -> Search {
        let term = term.trim();
        let mut pattern = String::from("%");
        for ch in term.to_lowercase().chars() {
            if matches!(ch, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(ch);
        }
        pattern.push('%');
        Search {
            message_id: term
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string(),
            pattern,
        }
    }
}

/// Pins the comparison to the machine (first claim) and marks it running.
/// A per-patch comparison is pinned as a whole: the parent and every step
/// run on the machine that claims the first of them (each step's patched
/// kernel is the next one's base kernel in that machine's cache), and the
/// parent runs while its steps do.
pub async fn pin_and_start(
    conn: &mut PgConnection,
    id: i64,
    machine_id: i64,
    inventory: serde_json::Value,
) -> Result<(), sqlx::Error> {
    let family = sqlx::query_scalar!(
        "WITH claimed AS (SELECT id, COALESCE(parent_id, id) AS family
                          FROM comparisons WHERE id = $1)
         UPDATE comparisons c
         SET machine_id = COALESCE(c.machine_id, $2),
             machine_inventory = COALESCE(c.machine_inventory, $3),
             status = CASE WHEN c.status = 'queued' AND (c.id = claimed.id OR c.id = claimed.family)
                           THEN 'running' ELSE c.status END,
             updated_at = now()
         FROM claimed
         WHERE c.id = claimed.family OR c.parent_id = claimed.family
         RETURNING c.id",
        id,
        machine_id,
        inventory
    )
    .fetch_all(&mut *conn)
    .await?;
    for pinned in family {
        super::reports::mark_stale(conn, pinned).await?;
    }
    Ok(())
}

/// Recomputes the status from the jobs (a cancelled comparison stays
/// cancelled): done when every job is done, failed when every job is final
/// and one failed, running once any job left the queue. Returns whether
/// this made an A/A comparison done, which changes its machine's noise
/// floor.
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
                 FROM jobs WHERE comparison_id = $1) s,
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

/// A step of a per-patch comparison as its parent lists it.
#[derive(Debug, Clone)]
pub struct StepRow {
    /// The step's comparison id.
    pub id: i64,
    /// Which patch (1-based).
    pub step: i32,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// Its series (patches 1..step).
    pub series_id: i64,
    /// A git range's step: its commit.
    pub commit_sha: Option<String>,
}

/// The steps of per-patch comparison `parent_id`, in order (none for an
/// ordinary comparison).
pub async fn steps(db: impl PgExecutor<'_>, parent_id: i64) -> Result<Vec<StepRow>, sqlx::Error> {
    sqlx::query_as!(
        StepRow,
        r#"SELECT id, step AS "step!", status AS "status: ComparisonStatus", series_id,
                  commit_sha
           FROM comparisons WHERE parent_id = $1 ORDER BY step"#,
        parent_id
    )
    .fetch_all(db)
    .await
}

/// How many steps the per-patch comparison `parent_id` has.
pub async fn step_count(db: impl PgExecutor<'_>, parent_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM comparisons WHERE parent_id = $1"#,
        parent_id
    )
    .fetch_one(db)
    .await
}

/// The comparisons a failed step `step` of `parent_id` leaves without a
/// series to build: the later steps and the parent, in that order.
pub async fn after_step(
    conn: &mut PgConnection,
    parent_id: i64,
    step: i32,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT id AS "id!" FROM comparisons
           WHERE (parent_id = $1 AND step > $2) OR id = $1
           ORDER BY step NULLS LAST"#,
        parent_id,
        step
    )
    .fetch_all(conn)
    .await
}

/// A bisection's probe as the bisection lists it.
#[derive(Debug, Clone)]
pub struct ProbeRow {
    /// The probe's comparison id.
    pub id: i64,
    /// The commit's position in the series (1-based).
    pub probe: i32,
    /// Where it stands.
    pub status: ComparisonStatus,
    /// The commit, for a git range.
    pub commit_sha: Option<String>,
    /// The machine it ran on, once claimed.
    pub machine_id: Option<i64>,
    /// Boots per side so far.
    pub runs_per_side: i32,
}

/// The probes of bisection `bisection_id`, in the order they were made.
pub async fn probes(
    db: impl PgExecutor<'_>,
    bisection_id: i64,
) -> Result<Vec<ProbeRow>, sqlx::Error> {
    sqlx::query_as!(
        ProbeRow,
        r#"SELECT id, probe AS "probe!", status AS "status: ComparisonStatus", commit_sha,
                  machine_id, runs_per_side
           FROM comparisons WHERE bisection_id = $1 ORDER BY id"#,
        bisection_id
    )
    .fetch_all(db)
    .await
}

/// The bisection comparison `id` is a probe of, and the position of the
/// commit it probes; `None` for any other comparison.
pub async fn probe_of(db: impl PgExecutor<'_>, id: i64) -> Result<Option<(i64, i32)>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT bisection_id AS "bisection_id!", probe AS "probe!"
           FROM comparisons WHERE id = $1 AND bisection_id IS NOT NULL"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.bisection_id, r.probe)))
}
