//! `lists` and `list_epochs`: the mailing lists followed, and how far each
//! epoch of a list's public-inbox archive was read.

use chrono::{DateTime, Utc};
use patchperf_common::api::{ListSubmission, WorkloadRule};
use patchperf_common::protocol::WorkloadParams;
use patchperf_common::run::MeasurementMode;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// Stores list `l`, whose default base is tree `tree_id` when it names a
/// tree, added by token `created_by`; its id, or `None` when the name is
/// taken. Counts too large for a column (the checks keep them far below)
/// are stored as its largest.
pub async fn insert(
    conn: &mut PgConnection,
    l: &ListSubmission,
    tree_id: Option<i64>,
    created_by: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let column = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    sqlx::query_scalar!(
        r#"INSERT INTO lists (name, address, archive_url, read_history, tree_id, base_url, base_branch, paths,
                              workload_map, workloads, params, runs_per_side, backend,
                              machine_name, cc_list, cc_thread, report_improvements,
                              wait_minutes, poll_minutes, max_in_flight, daily_cap, created_by,
                              pool)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                   $18, $19, $20, $21, $22, $23)
           ON CONFLICT (name) DO NOTHING
           RETURNING id"#,
        l.name,
        l.address,
        l.archive_url.as_deref(),
        l.read_history,
        tree_id,
        l.base_url.as_deref(),
        l.base_branch.as_deref(),
        l.paths.as_deref().unwrap_or_default(),
        Json(l.workload_map.as_deref().unwrap_or_default()) as _,
        l.workloads.as_deref().unwrap_or_default(),
        Json(&l.params) as _,
        column(l.runs),
        l.backend.map(MeasurementMode::as_str),
        l.machine.as_deref(),
        l.cc_list,
        l.cc_thread,
        l.report_improvements,
        column(l.wait_minutes),
        column(l.poll_minutes),
        column(l.max_in_flight),
        column(l.daily_cap),
        created_by,
        l.pool.as_deref()
    )
    .fetch_optional(conn)
    .await
}

/// A stored list, with its base tree's repository when it names one.
#[derive(Debug, Clone)]
pub struct ListRow {
    /// Row id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its posting address.
    pub address: String,
    /// Its archive.
    pub archive_url: Option<String>,
    /// Read from its first message.
    pub read_history: bool,
    /// Its base tree.
    pub tree_id: Option<i64>,
    /// The base tree's name.
    pub tree_name: Option<String>,
    /// The repository of the default base (the tree's, or its own).
    pub base_url: String,
    /// Its branch.
    pub base_branch: String,
    /// Path filter.
    pub paths: Vec<String>,
    /// Workloads by path.
    pub workload_map: Json<Vec<WorkloadRule>>,
    /// Workloads otherwise.
    pub workloads: Vec<String>,
    /// Their parameters.
    pub params: Json<WorkloadParams>,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Measurement mode asked for.
    pub backend: Option<String>,
    /// Machine to measure on.
    pub machine_name: Option<String>,
    /// Pool to measure on, when no machine is named.
    pub pool: Option<String>,
    /// Cc the list.
    pub cc_list: bool,
    /// Cc the thread.
    pub cc_thread: bool,
    /// Answer improvements.
    pub report_improvements: bool,
    /// Minutes a series waits for its missing patches.
    pub wait_minutes: i32,
    /// Minutes between reads of the archive.
    pub poll_minutes: i32,
    /// Series queued at once.
    pub max_in_flight: i32,
    /// Replies a day.
    pub daily_cap: i32,
    /// The token that added it.
    pub created_by: i64,
    /// Last read of the archive.
    pub polled_at: Option<DateTime<Utc>>,
    /// What went wrong then.
    pub poll_error: Option<String>,
    /// Messages stored.
    pub messages: i64,
}

/// Lists, by name; `id` alone when given.
pub async fn all(db: impl PgExecutor<'_>, id: Option<i64>) -> Result<Vec<ListRow>, sqlx::Error> {
    sqlx::query_as!(
        ListRow,
        r#"SELECT l.id, l.name, l.address, l.archive_url, l.read_history, l.tree_id, t.name AS "tree_name?",
                  COALESCE(t.url, l.base_url) AS "base_url!",
                  COALESCE(t.branch, l.base_branch) AS "base_branch!",
                  l.paths, l.workload_map AS "workload_map: Json<Vec<WorkloadRule>>", l.workloads,
                  l.params AS "params: Json<WorkloadParams>", l.runs_per_side, l.backend,
                  l.machine_name, l.cc_list, l.cc_thread, l.report_improvements, l.wait_minutes,
                  l.poll_minutes, l.max_in_flight, l.daily_cap, l.created_by, l.polled_at,
                  l.poll_error, l.pool,
                  (SELECT count(*) FROM list_messages m WHERE m.list_id = l.id) AS "messages!"
           FROM lists l LEFT JOIN trees t ON t.id = l.tree_id
           WHERE $1::bigint IS NULL OR l.id = $1
           ORDER BY l.name"#,
        id
    )
    .fetch_all(db)
    .await
}

/// Removes a list with its messages and series (their comparisons stay).
pub async fn delete(db: impl PgExecutor<'_>, id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!("DELETE FROM lists WHERE id = $1", id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The lists with an archive not read for their poll interval.
pub async fn due(db: impl PgExecutor<'_>) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM lists
         WHERE archive_url IS NOT NULL
           AND (polled_at IS NULL OR polled_at < now() - make_interval(mins => poll_minutes))
         ORDER BY polled_at NULLS FIRST, id"
    )
    .fetch_all(db)
    .await
}

/// Notes a read of the archive and its failure, if any; a read that
/// left messages for the next round (not `whole`) keeps the list due.
pub async fn polled(
    db: impl PgExecutor<'_>,
    id: i64,
    error: Option<&str>,
    whole: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE lists SET polled_at = CASE WHEN $3 THEN now() ELSE polled_at END,
                          poll_error = $2
         WHERE id = $1",
        id,
        error,
        whole
    )
    .execute(db)
    .await?;
    Ok(())
}

/// One epoch of an archive and the last commit read from it.
#[derive(Debug, Clone)]
pub struct Epoch {
    /// 0, 1, …
    pub epoch: i32,
    /// Its repository.
    pub url: String,
    /// The newest commit read.
    pub last_commit: Option<String>,
    /// The archive manifest's fingerprint of the epoch when it was last
    /// read to its head.
    pub fingerprint: Option<String>,
}

/// The epochs of list `id` known so far, oldest first.
pub async fn epochs(db: impl PgExecutor<'_>, id: i64) -> Result<Vec<Epoch>, sqlx::Error> {
    sqlx::query_as!(
        Epoch,
        "SELECT epoch, url, last_commit, fingerprint FROM list_epochs
         WHERE list_id = $1 ORDER BY epoch",
        id
    )
    .fetch_all(db)
    .await
}

/// Notes that epoch `epoch` was read to its head when the archive's
/// manifest gave it `fingerprint`.
pub async fn read_to_head(
    db: impl PgExecutor<'_>,
    id: i64,
    epoch: i32,
    fingerprint: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_epochs SET fingerprint = $3 WHERE list_id = $1 AND epoch = $2",
        id,
        epoch,
        fingerprint
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Notes that epoch `epoch` (at `url`) was read up to `commit`.
pub async fn read_up_to(
    db: impl PgExecutor<'_>,
    id: i64,
    epoch: i32,
    url: &str,
    commit: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO list_epochs (list_id, epoch, url, last_commit) VALUES ($1, $2, $3, $4)
         ON CONFLICT (list_id, epoch) DO UPDATE SET last_commit = EXCLUDED.last_commit",
        id,
        epoch,
        url,
        commit
    )
    .execute(db)
    .await?;
    Ok(())
}
