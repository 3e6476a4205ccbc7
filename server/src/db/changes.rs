//! `change_points`: level shifts found in tree histories, and what people
//! said of them.

use chrono::{DateTime, Utc};
use patchperf_common::api::{ChangeState, ChangeVerdict};
use sqlx::{PgConnection, PgExecutor};

use super::history::HistoryKey;

/// A change point to store.
#[derive(Debug, Clone)]
pub struct NewChange<'a> {
    /// Its history.
    pub key: &'a HistoryKey,
    /// The first point of the new level.
    pub position: i32,
    /// The last point of the old level.
    pub from_position: i32,
    /// The commit at `position`.
    pub commit_sha: &'a str,
    /// Mean of the old level.
    pub mean_before: f64,
    /// Mean of the new level.
    pub mean_after: f64,
    /// Relative change in percent.
    pub change_percent: f64,
    /// Its 95% interval, when bounded.
    pub interval: Option<(f64, f64)>,
    /// Welch's p of the split.
    pub p: f64,
    /// Which way it moved.
    pub verdict: ChangeVerdict,
    /// The comparison that measured the commit.
    pub comparison_id: i64,
}

/// Stores a change point; its id when it is new (one found before at the
/// same commit of the same history stays as it is).
pub async fn insert(
    conn: &mut PgConnection,
    c: &NewChange<'_>,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO change_points (tree_id, machine_id, measurement, workload, mode, nr_task,
                                    metric, position, from_position, commit_sha, mean_before,
                                    mean_after, change_percent, low, high, p, verdict,
                                    comparison_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
         ON CONFLICT DO NOTHING
         RETURNING id",
        c.key.tree_id,
        c.key.machine_id,
        c.key.measurement,
        c.key.workload,
        c.key.mode,
        c.key.nr_task,
        c.key.metric,
        c.position,
        c.from_position,
        c.commit_sha,
        c.mean_before,
        c.mean_after,
        c.change_percent,
        c.interval.map(|i| i.0),
        c.interval.map(|i| i.1),
        c.p,
        c.verdict as ChangeVerdict,
        c.comparison_id
    )
    .fetch_optional(conn)
    .await
}

/// Notes the bisection started for change point `id`.
pub async fn set_bisection(
    conn: &mut PgConnection,
    id: i64,
    bisection_id: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE change_points SET bisection_id = $2 WHERE id = $1",
        id,
        bisection_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// How many bisections the tree's change points started in the last day.
pub async fn bisections_today(db: impl PgExecutor<'_>, tree_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM change_points
           WHERE tree_id = $1 AND bisection_id IS NOT NULL
             AND created_at > now() - interval '1 day'"#,
        tree_id
    )
    .fetch_one(db)
    .await
}

/// A change point as a comparison's page links it.
#[derive(Debug, Clone)]
pub struct ChangeMark {
    /// Row id.
    pub id: i64,
    /// The workload.
    pub workload: String,
    /// Tasks.
    pub nr_task: i32,
    /// The metric.
    pub metric: String,
    /// Relative change in percent.
    pub change_percent: f64,
    /// Which way it moved.
    pub verdict: ChangeVerdict,
}

/// The change points found at a commit comparison `id` or one of its
/// steps measured, oldest first.
pub async fn of_comparison(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Vec<ChangeMark>, sqlx::Error> {
    sqlx::query_as!(
        ChangeMark,
        r#"SELECT id, workload, nr_task, metric, change_percent,
                  verdict AS "verdict: ChangeVerdict"
           FROM change_points
           WHERE comparison_id = $1
              OR comparison_id IN (SELECT s.id FROM comparisons s WHERE s.parent_id = $1)
           ORDER BY id"#,
        id
    )
    .fetch_all(db)
    .await
}

/// A change point as listed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChangeRow {
    /// Row id.
    pub id: i64,
    /// The tree.
    pub tree_id: i64,
    /// Its name.
    pub tree: String,
    /// The machine.
    pub machine: String,
    /// How it measured.
    pub measurement: String,
    /// The workload.
    pub workload: String,
    /// `process` or `thread`.
    pub mode: String,
    /// Tasks.
    pub nr_task: i32,
    /// The metric.
    pub metric: String,
    /// The first point of the new level.
    pub position: i32,
    /// The last point of the old level.
    pub from_position: i32,
    /// The commit at `position`.
    pub commit_sha: String,
    /// Its subject.
    pub subject: String,
    /// Its author.
    pub author: String,
    /// Mean of the old level.
    pub mean_before: f64,
    /// Mean of the new level.
    pub mean_after: f64,
    /// Relative change in percent.
    pub change_percent: f64,
    /// 95% interval, low end.
    pub low: Option<f64>,
    /// 95% interval, high end.
    pub high: Option<f64>,
    /// Welch's p of the split.
    pub p: f64,
    /// Which way it moved.
    pub verdict: ChangeVerdict,
    /// The comparison that measured the commit.
    pub comparison_id: Option<i64>,
    /// The bisection started for it.
    pub bisection_id: Option<i64>,
    /// What people said of it.
    pub state: ChangeState,
    /// What was said when it was acknowledged.
    pub note: Option<String>,
    /// The name of the token it was marked with (the person or bot).
    pub acknowledged_by: Option<String>,
    /// When it was marked.
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// When it was found.
    pub created_at: DateTime<Utc>,
}

/// Which change points to list.
#[derive(Debug, Clone, Copy)]
pub struct ChangeFilter {
    /// Of this tree only.
    pub tree_id: Option<i64>,
    /// In this state only.
    pub state: Option<ChangeState>,
    /// Only ids below this (the previous page's last).
    pub before: Option<i64>,
    /// Page size.
    pub limit: i64,
}

/// Change points, newest first.
pub async fn list(db: impl PgExecutor<'_>, f: ChangeFilter) -> Result<Vec<ChangeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChangeRow,
        r#"SELECT c.id, c.tree_id, t.name AS tree, m.name AS machine, c.measurement, c.workload,
                  c.mode, c.nr_task, c.metric, c.position, c.from_position, c.commit_sha,
                  COALESCE(tc.subject, '') AS "subject!", COALESCE(tc.author, '') AS "author!",
                  c.mean_before, c.mean_after, c.change_percent, c.low, c.high, c.p,
                  c.verdict AS "verdict: ChangeVerdict", c.comparison_id, c.bisection_id,
                  c.state AS "state: ChangeState", c.note,
                  k.name AS "acknowledged_by?", c.acknowledged_at, c.created_at
           FROM change_points c
           JOIN trees t ON t.id = c.tree_id
           JOIN machines m ON m.id = c.machine_id
           LEFT JOIN tokens k ON k.id = c.acknowledged_by
           LEFT JOIN tree_commits tc ON tc.tree_id = c.tree_id AND tc.commit_sha = c.commit_sha
           WHERE ($1::bigint IS NULL OR c.tree_id = $1)
             AND ($2::text IS NULL OR c.state = $2)
             AND ($3::bigint IS NULL OR c.id < $3)
           ORDER BY c.id DESC
           LIMIT $4"#,
        f.tree_id,
        f.state.map(ChangeState::as_str),
        f.before,
        f.limit
    )
    .fetch_all(db)
    .await
}

/// Marks change point `id` acknowledged or expected with a note; whether
/// there was one.
pub async fn acknowledge(
    conn: &mut PgConnection,
    id: i64,
    state: ChangeState,
    note: &str,
    by: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "UPDATE change_points
         SET state = $2, note = $3, acknowledged_by = $4, acknowledged_at = now()
         WHERE id = $1",
        id,
        state.as_str(),
        note,
        by
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How many open change points each tree has (trees without any left out).
pub async fn open_counts(db: impl PgExecutor<'_>) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT tree_id, count(*) AS "n!" FROM change_points
           WHERE state = 'open' GROUP BY tree_id"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.tree_id, r.n)).collect())
}
