//! `history_points`: what each tested commit of a tree measured, one row
//! per (workload, mode, nr_task, metric, machine, measurement, commit), so
//! that a metric's history is one indexed range of its primary key.

use patchperf_common::api::HistoryPoint;
use sqlx::{PgConnection, PgExecutor};

/// Which history: one per (tree, machine, measurement, workload, mode,
/// nr_task, metric).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryKey {
    /// The tree.
    pub tree_id: i64,
    /// The machine measured on.
    pub machine_id: i64,
    /// How it measured (`tcg-icount`, `kvm`, …).
    pub measurement: String,
    /// The workload.
    pub workload: String,
    /// `process` or `thread`.
    pub mode: String,
    /// Tasks.
    pub nr_task: i32,
    /// The metric.
    pub metric: String,
}

/// A point to store: what one commit measured in one history.
#[derive(Debug, Clone)]
pub struct NewPoint {
    /// Its history.
    pub key: HistoryKey,
    /// The commit's place in the tree's tested line.
    pub position: i32,
    /// The commit.
    pub commit_sha: String,
    /// The metric on each boot.
    pub runs: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// 95% interval of the mean.
    pub interval: Option<(f64, f64)>,
    /// The comparison that measured it.
    pub comparison_id: i64,
}

/// Stores a point; a commit measured before keeps its first point.
pub async fn insert(conn: &mut PgConnection, p: &NewPoint) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO history_points (tree_id, machine_id, measurement, workload, mode, nr_task,
                                     metric, position, commit_sha, runs, mean, low, high,
                                     comparison_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT DO NOTHING",
        p.key.tree_id,
        p.key.machine_id,
        p.key.measurement,
        p.key.workload,
        p.key.mode,
        p.key.nr_task,
        p.key.metric,
        p.position,
        p.commit_sha,
        &p.runs,
        p.mean,
        p.interval.map(|i| i.0),
        p.interval.map(|i| i.1),
        p.comparison_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One history, oldest commit first, as the API shows it: one range of
/// the primary key.
pub async fn points(
    db: impl PgExecutor<'_>,
    key: &HistoryKey,
) -> Result<Vec<HistoryPoint>, sqlx::Error> {
    sqlx::query_as!(
        HistoryPoint,
        "SELECT h.position, h.commit_sha AS commit, c.subject, c.author, c.committed_at, h.runs, h.mean,
                h.low, h.high, h.comparison_id
         FROM history_points h
         JOIN tree_commits c ON c.tree_id = h.tree_id AND c.commit_sha = h.commit_sha
         WHERE h.tree_id = $1 AND h.workload = $2 AND h.mode = $3 AND h.nr_task = $4
           AND h.metric = $5 AND h.machine_id = $6 AND h.measurement = $7
         ORDER BY h.position",
        key.tree_id,
        key.workload,
        key.mode,
        key.nr_task,
        key.metric,
        key.machine_id,
        key.measurement
    )
    .fetch_all(db)
    .await
}

/// A history a tree has, and how many points it holds.
#[derive(Debug, Clone)]
pub struct HistoryRow {
    /// The workload.
    pub workload: String,
    /// `process` or `thread`.
    pub mode: String,
    /// Tasks.
    pub nr_task: i32,
    /// The metric.
    pub metric: String,
    /// The machine.
    pub machine_id: i64,
    /// Its name.
    pub machine: String,
    /// How it measured.
    pub measurement: String,
    /// Points.
    pub points: i64,
}

impl HistoryRow {
    /// The key of this history of tree `tree_id`.
    pub fn key(&self, tree_id: i64) -> HistoryKey {
        HistoryKey {
            tree_id,
            machine_id: self.machine_id,
            measurement: self.measurement.clone(),
            workload: self.workload.clone(),
            mode: self.mode.clone(),
            nr_task: self.nr_task,
            metric: self.metric.clone(),
        }
    }
}

/// Every history of the tree.
pub async fn of_tree(
    db: impl PgExecutor<'_>,
    tree_id: i64,
) -> Result<Vec<HistoryRow>, sqlx::Error> {
    sqlx::query_as!(
        HistoryRow,
        r#"SELECT h.workload, h.mode, h.nr_task, h.metric, h.machine_id, m.name AS machine,
                  h.measurement, count(*) AS "points!"
           FROM history_points h JOIN machines m ON m.id = h.machine_id
           WHERE h.tree_id = $1
           GROUP BY h.workload, h.mode, h.nr_task, h.metric, h.machine_id, m.name, h.measurement
           ORDER BY h.workload, h.mode, h.nr_task, h.metric, m.name, h.measurement"#,
        tree_id
    )
    .fetch_all(db)
    .await
}

/// The finished tree comparisons whose points are still to be written
/// (whole ranges, not their steps).
pub async fn due(db: impl PgExecutor<'_>) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM comparisons
         WHERE tree_id IS NOT NULL AND NOT history_recorded AND parent_id IS NULL
           AND status IN ('done', 'failed', 'cancelled')
         ORDER BY id"
    )
    .fetch_all(db)
    .await
}

/// Notes that comparison `id`'s points were written.
pub async fn recorded(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET history_recorded = true WHERE id = $1",
        id
    )
    .execute(conn)
    .await?;
    Ok(())
}
