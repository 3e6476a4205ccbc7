//! `trees` and `tree_commits`: the branches patchperf follows, and the
//! commits of each in the order they were tested.

use chrono::{DateTime, Utc};
use patchperf_common::api::Setup;
use patchperf_common::protocol::WorkloadParams;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// A new tracked tree, checked, at its current head.
#[derive(Debug, Clone)]
pub struct NewTree<'a> {
    /// Its name.
    pub name: &'a str,
    /// The repository.
    pub url: &'a str,
    /// The branch.
    pub branch: &'a str,
    /// What each new head is measured on, and where, its run length fixed.
    pub setup: &'a Setup,
    /// The machine `setup` names.
    pub machine_id: Option<i64>,
    /// At most one test per this many hours.
    pub min_hours: i32,
    /// Copied on mailed reports.
    pub cc: &'a [String],
    /// Where report JSON goes.
    pub webhook_url: Option<&'a str>,
    /// The head now: the first tested commit's base.
    pub head: &'a str,
    /// The token that added it.
    pub created_by: i64,
}

/// Stores a tree; its id, or `None` when the name is taken.
pub async fn insert(conn: &mut PgConnection, t: &NewTree<'_>) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"INSERT INTO trees (name, url, branch, setup, params, runs_per_side, machine_id,
                              min_hours, cc, webhook_url, tested_commit, anchor_commit,
                              created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)
           ON CONFLICT (name) DO NOTHING
           RETURNING id"#,
        t.name,
        t.url,
        t.branch,
        super::setup::stored(t.setup) as _,
        Json(t.setup.params.resolve(None)) as _,
        i32::try_from(t.setup.runs).unwrap_or(i32::MAX),
        t.machine_id,
        t.min_hours,
        t.cc,
        t.webhook_url,
        t.head,
        t.created_by
    )
    .fetch_optional(conn)
    .await
}

/// A stored tree.
#[derive(Debug, Clone)]
pub struct TreeRow {
    /// Row id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The repository.
    pub url: String,
    /// The branch.
    pub branch: String,
    /// What each new head is measured on, as asked when it was added
    /// (workloads left empty are the map's); [`TreeRow::setup`] is as in
    /// effect.
    pub asked: Json<Setup>,
    /// Parameters, the run length fixed when it was added.
    pub params: Json<WorkloadParams>,
    /// Boots per side.
    pub runs_per_side: i32,
    /// Machine to measure on.
    pub machine_id: Option<i64>,
    /// Its name.
    pub machine_name: Option<String>,
    /// At most one test per this many hours.
    pub min_hours: i32,
    /// Copied on mailed reports.
    pub cc: Vec<String>,
    /// Where report JSON goes.
    pub webhook_url: Option<String>,
    /// The newest head queued for testing.
    pub tested_commit: String,
    /// The commit its kernels are built over (see [`tested`]).
    pub anchor_commit: String,
    /// When it was queued.
    pub tested_at: Option<DateTime<Utc>>,
    /// When the branch was last looked at.
    pub polled_at: Option<DateTime<Utc>>,
    /// The token that added it.
    pub created_by: i64,
    /// What the last rewrite of the branch did, when it was rewritten.
    pub rewrite_note: Option<String>,
    /// Why the last new head was not measured, until one is.
    pub push_note: Option<String>,
}

impl TreeRow {
    /// What each new head is measured on, and where.
    pub fn setup(&self) -> Setup {
        super::setup::in_effect(
            &self.asked,
            &self.params,
            self.runs_per_side,
            self.machine_name.clone(),
        )
    }
}

/// The id of the tree named `name`.
pub async fn id_by_name(db: impl PgExecutor<'_>, name: &str) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!("SELECT id FROM trees WHERE name = $1", name)
        .fetch_optional(db)
        .await
}

/// The tree with this id; with `lock`, its row is locked for the rest of
/// the transaction (one server looks at a branch at a time).
pub async fn find(
    conn: &mut PgConnection,
    id: i64,
    lock: bool,
) -> Result<Option<TreeRow>, sqlx::Error> {
    if lock {
        // Not FOR UPDATE: the comparison a poll stores references the tree,
        // and its foreign key check takes the key share lock FOR UPDATE
        // would block.
        sqlx::query!("SELECT id FROM trees WHERE id = $1 FOR NO KEY UPDATE", id)
            .fetch_optional(&mut *conn)
            .await?;
    }
    sqlx::query_as!(
        TreeRow,
        r#"SELECT t.id, t.name, t.url, t.branch, t.setup AS "asked!: Json<Setup>",
                  t.params AS "params: Json<WorkloadParams>", t.runs_per_side, t.machine_id,
                  m.name AS "machine_name?", t.min_hours, t.cc, t.webhook_url,
                  t.tested_commit, t.anchor_commit, t.tested_at, t.polled_at, t.created_by,
                  t.rewrite_note, t.push_note
           FROM trees t LEFT JOIN machines m ON m.id = t.machine_id
           WHERE t.id = $1"#,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Tree `id`'s name and the subject of its tested commit `sha`, when it
/// tested one: what a comparison of its head is named by.
pub async fn named_commit(
    db: impl PgExecutor<'_>,
    id: i64,
    sha: &str,
) -> Result<Option<(String, Option<String>)>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT t.name,
                  (SELECT c.subject FROM tree_commits c
                   WHERE c.tree_id = t.id AND c.commit_sha = $2) AS "subject?"
           FROM trees t WHERE t.id = $1"#,
        id,
        sha
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.name, r.subject)))
}

/// Every tree's id, in order.
pub async fn ids(db: impl PgExecutor<'_>) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!("SELECT id FROM trees ORDER BY id")
        .fetch_all(db)
        .await
}

/// The trees not looked at for `seconds` (or never), oldest look first.
pub async fn due(db: impl PgExecutor<'_>, seconds: f64) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM trees
         WHERE polled_at IS NULL OR polled_at < now() - make_interval(secs => $1)
         ORDER BY polled_at NULLS FIRST",
        seconds
    )
    .fetch_all(db)
    .await
}

/// Notes that the branch was looked at now.
pub async fn polled(conn: &mut PgConnection, id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!("UPDATE trees SET polled_at = now() WHERE id = $1", id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Notes that `head` was queued for testing now, its kernels built over
/// `anchor`; or, with `not_measured` (why), that it was looked at and not
/// measured (the schedule's clock, `tested_at`, stays: nothing was
/// tested).
pub async fn tested(
    conn: &mut PgConnection,
    id: i64,
    head: &str,
    anchor: &str,
    not_measured: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE trees SET tested_commit = $2, anchor_commit = $3, push_note = $4,
                          tested_at = CASE WHEN $4::text IS NULL THEN now() ELSE tested_at END
         WHERE id = $1",
        id,
        head,
        anchor,
        not_measured
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The branch was rewritten: the tree's tested line is cut back to
/// `fork` (the merge base of the old tested head and the new head), the
/// commits after it and their history points go (they are no longer on the
/// branch), and `note` says what happened. Without `fork` on the line (the
/// branch was rewritten below the tree's first commit) the whole line
/// goes, and `fork` starts it again (`subject`, `author`, `committed_at`).
pub async fn rewind(
    conn: &mut PgConnection,
    id: i64,
    fork: &TreeCommit,
    note: &str,
) -> Result<(), sqlx::Error> {
    let kept = sqlx::query_scalar!(
        "SELECT position FROM tree_commits WHERE tree_id = $1 AND commit_sha = $2",
        id,
        fork.commit_sha
    )
    .fetch_optional(&mut *conn)
    .await?
    .unwrap_or(-1);
    sqlx::query!(
        "DELETE FROM history_points WHERE tree_id = $1 AND position > $2",
        id,
        kept
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM tree_commits WHERE tree_id = $1 AND position > $2",
        id,
        kept
    )
    .execute(&mut *conn)
    .await?;
    if kept < 0 {
        append_commit(
            conn,
            id,
            &fork.commit_sha,
            &fork.subject,
            &fork.author,
            fork.committed_at,
        )
        .await?;
    }
    sqlx::query!("UPDATE trees SET rewrite_note = $2 WHERE id = $1", id, note)
        .execute(conn)
        .await?;
    Ok(())
}

/// A commit of a tree's tested line.
#[derive(Debug, Clone)]
pub struct TreeCommit {
    /// Its place in the line.
    pub position: i32,
    /// The commit.
    pub commit_sha: String,
    /// Its subject.
    pub subject: String,
    /// Its author.
    pub author: String,
    /// When it was committed.
    pub committed_at: Option<DateTime<Utc>>,
}

/// Appends `commit` to the tree's tested line (after the last); a commit
/// already in it stays where it is.
pub async fn append_commit(
    conn: &mut PgConnection,
    tree_id: i64,
    sha: &str,
    subject: &str,
    author: &str,
    committed_at: Option<DateTime<Utc>>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO tree_commits (tree_id, position, commit_sha, subject, author, committed_at)
         SELECT $1, COALESCE(max(position) + 1, 0), $2, $3, $4, $5
         FROM tree_commits WHERE tree_id = $1
         ON CONFLICT (tree_id, commit_sha) DO NOTHING",
        tree_id,
        sha,
        subject,
        author,
        committed_at
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The tree's tested line, in order.
pub async fn commits(
    db: impl PgExecutor<'_>,
    tree_id: i64,
) -> Result<Vec<TreeCommit>, sqlx::Error> {
    sqlx::query_as!(
        TreeCommit,
        "SELECT position, commit_sha, subject, author, committed_at
         FROM tree_commits WHERE tree_id = $1 ORDER BY position",
        tree_id
    )
    .fetch_all(db)
    .await
}
