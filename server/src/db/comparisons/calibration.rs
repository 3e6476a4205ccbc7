//! The calibration queries of `comparisons`: a machine's A/A comparisons,
//! finished or still to run, and which A/A calibrates which comparison.

use chrono::{DateTime, Utc};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::WorkloadParams;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

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
        r#"SELECT id, status AS "status: ComparisonStatus",
                  setup_workloads(setup) AS "workloads!",
                  params AS "params: Json<WorkloadParams>", setup ->> 'backend' AS backend,
                  finished_at,
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

/// The A/A comparison queued to calibrate for comparison `id`, with its
/// status, when there is one (the newest).
pub async fn calibration_of(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<(i64, ComparisonStatus)>, sqlx::Error> {
    sqlx::query_as!(
        CalibrationOf,
        r#"SELECT id, status AS "status: ComparisonStatus" FROM comparisons
           WHERE calibrates = $1 ORDER BY id DESC LIMIT 1"#,
        id
    )
    .fetch_optional(db)
    .await
    .map(|row| row.map(|r| (r.id, r.status)))
}

struct CalibrationOf {
    id: i64,
    status: ComparisonStatus,
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

/// Sets the claim priority of comparison `id` and its steps.
pub async fn set_family_priority(
    conn: &mut PgConnection,
    id: i64,
    priority: i16,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET priority = $2 WHERE id = $1 OR parent_id = $1",
        id,
        priority
    )
    .execute(conn)
    .await?;
    Ok(())
}
