//! `list_series`: each version of a patch series posted to a list, as
//! assembled from its messages, and where it stands.

use chrono::{DateTime, Utc};
use patchperf_common::api::SeriesState;
use sqlx::{PgConnection, PgExecutor};

/// A series version as assembled.
#[derive(Debug, Clone)]
pub struct NewSeries<'a> {
    /// Its list.
    pub list_id: i64,
    /// The thread it is in.
    pub thread_root: &'a str,
    /// The cover letter's or first patch's Message-ID.
    pub anchor: &'a str,
    /// What tells its versions apart from other series.
    pub series_key: &'a str,
    /// vN.
    pub version: i32,
    /// N.
    pub total: i32,
    /// The anchor's subject.
    pub subject: &'a str,
    /// The subject without its prefix.
    pub title: &'a str,
    /// Who sent it, as a person reads it (`Jörg Hacker <jh@example.org>`).
    pub author: String,
    /// Its `Date:`.
    pub posted_at: Option<DateTime<Utc>>,
}

/// Stores a series version first seen (as waiting) or finds it; its row.
pub async fn upsert(conn: &mut PgConnection, s: &NewSeries<'_>) -> Result<SeriesRow, sqlx::Error> {
    sqlx::query!(
        "INSERT INTO list_series (list_id, thread_root, anchor, series_key, version, total,
                                  subject, title, author, posted_at, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'waiting')
         ON CONFLICT (list_id, anchor) DO NOTHING",
        s.list_id,
        s.thread_root,
        s.anchor,
        s.series_key,
        s.version,
        s.total,
        s.subject,
        s.title,
        &s.author,
        s.posted_at
    )
    .execute(&mut *conn)
    .await?;
    let id = sqlx::query_scalar!(
        "SELECT id FROM list_series WHERE list_id = $1 AND anchor = $2 FOR UPDATE",
        s.list_id,
        s.anchor
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(find(conn, id)
        .await?
        .expect("the series row was just stored and is locked"))
}

/// A stored series version, with its list's name and what became of it.
#[derive(Debug, Clone)]
pub struct SeriesRow {
    /// Row id.
    pub id: i64,
    /// Its list.
    pub list_id: i64,
    /// The list's name.
    pub list: String,
    /// The thread.
    pub thread_root: String,
    /// The message a reply answers.
    pub anchor: String,
    /// What its versions share.
    pub series_key: String,
    /// vN.
    pub version: i32,
    /// N.
    pub total: i32,
    /// The anchor's subject.
    pub subject: String,
    /// Without its prefix.
    pub title: String,
    /// Who sent it.
    pub author: String,
    /// Its `Date:`.
    pub posted_at: Option<DateTime<Utc>>,
    /// Where it is.
    pub state: SeriesState,
    /// Why.
    pub reason: Option<String>,
    /// Patch numbers not arrived.
    pub missing: Vec<i32>,
    /// Its comparison.
    pub comparison_id: Option<i64>,
    /// The comparison's stored overall verdict.
    pub verdict: Option<String>,
    /// The earlier version.
    pub previous_id: Option<i64>,
    /// The later version.
    pub next_id: Option<i64>,
    /// The reply's Message-ID.
    pub reply_message_id: Option<String>,
    /// First seen.
    pub seen_at: DateTime<Utc>,
}

/// Series version `id`.
pub async fn find(db: impl PgExecutor<'_>, id: i64) -> Result<Option<SeriesRow>, sqlx::Error> {
    let only = Filter {
        id: Some(id),
        ..Filter::default()
    };
    Ok(list(db, &only, 1).await?.pop())
}

/// Which series versions [`list`] reads; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// This one.
    pub id: Option<i64>,
    /// A list's.
    pub list_id: Option<i64>,
    /// In this state.
    pub state: Option<SeriesState>,
    /// The versions of one series.
    pub key: Option<&'a str>,
    /// The oldest first (else the newest).
    pub oldest_first: bool,
    /// Only those missing no patch.
    pub complete: bool,
}

/// Series versions as `f` narrows them, newest first unless it asks for
/// the oldest.
pub async fn list(
    db: impl PgExecutor<'_>,
    f: &Filter<'_>,
    limit: i64,
) -> Result<Vec<SeriesRow>, sqlx::Error> {
    sqlx::query_as!(
        SeriesRow,
        r#"SELECT s.id, s.list_id, l.name AS list, s.thread_root, s.anchor, s.series_key,
                  s.version, s.total, s.subject, s.title, s.author, s.posted_at,
                  s.state AS "state: SeriesState", s.reason, s.missing, s.comparison_id,
                  c.verdict AS "verdict?", s.previous_id,
                  (SELECT n.id FROM list_series n WHERE n.previous_id = s.id
                   ORDER BY n.id LIMIT 1) AS next_id,
                  s.reply_message_id, s.seen_at
           FROM list_series s
           JOIN lists l ON l.id = s.list_id
           LEFT JOIN comparisons c ON c.id = s.comparison_id
           WHERE ($1::bigint IS NULL OR s.id = $1)
             AND ($2::bigint IS NULL OR s.list_id = $2)
             AND ($3::text IS NULL OR s.state = $3)
             AND ($4::text IS NULL OR s.series_key = $4)
             AND (NOT $7 OR cardinality(s.missing) = 0)
           ORDER BY CASE WHEN $6 THEN s.id END, s.id DESC
           LIMIT $5"#,
        f.id,
        f.list_id,
        f.state.map(SeriesState::as_str),
        f.key,
        limit,
        f.oldest_first,
        f.complete
    )
    .fetch_all(db)
    .await
}

/// Moves series `id` to `state` for `reason`, with the patches missing.
pub async fn set_state(
    db: impl PgExecutor<'_>,
    id: i64,
    state: SeriesState,
    reason: Option<&str>,
    missing: &[i32],
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_series SET state = $2, reason = $3, missing = $4, updated_at = now()
         WHERE id = $1",
        id,
        state.as_str(),
        reason,
        missing
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Series `id` is measured by comparison `comparison_id`.
pub async fn queued(
    db: impl PgExecutor<'_>,
    id: i64,
    comparison_id: i64,
    reason: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_series SET state = 'queued', comparison_id = $2, reason = $3, missing = '{}',
                                updated_at = now()
         WHERE id = $1",
        id,
        comparison_id,
        reason
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Series `id` follows `previous_id`.
pub async fn follows(
    db: impl PgExecutor<'_>,
    id: i64,
    previous_id: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_series SET previous_id = $2 WHERE id = $1 AND previous_id IS NULL",
        id,
        previous_id
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The newest earlier version of `key` on the list, before version
/// `version`.
pub async fn previous_version(
    db: impl PgExecutor<'_>,
    list_id: i64,
    key: &str,
    version: i32,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM list_series WHERE list_id = $1 AND series_key = $2 AND version < $3
         ORDER BY version DESC, id DESC LIMIT 1",
        list_id,
        key,
        version
    )
    .fetch_optional(db)
    .await
}

/// The same posting (by `anchor`) on another list than `list_id`, already
/// measuring or measured there: (its series id, its list's name), locked
/// for the caller's transaction.
pub async fn measured_elsewhere(
    conn: &mut PgConnection,
    anchor: &str,
    list_id: i64,
) -> Result<Option<(i64, String)>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT s.id, l.name FROM list_series s JOIN lists l ON l.id = s.list_id
         WHERE s.anchor = $1 AND s.list_id <> $2
           AND s.state IN ('queued', 'measured', 'reported', 'failed')
         ORDER BY s.id LIMIT 1 FOR UPDATE OF s",
        anchor,
        list_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.id, r.name)))
}

/// The addresses of the other followed lists that carry the posting
/// `anchor` and want their copy of its answer (`cc_list`).
pub async fn other_lists_carrying(
    db: impl PgExecutor<'_>,
    anchor: &str,
    list_id: i64,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT DISTINCT l.address FROM list_series s JOIN lists l ON l.id = s.list_id
         WHERE s.anchor = $1 AND s.list_id <> $2 AND l.cc_list
         ORDER BY l.address",
        anchor,
        list_id
    )
    .fetch_all(db)
    .await
}

/// The newest version of `key` on the list, if any.
pub async fn newest_version(
    db: impl PgExecutor<'_>,
    list_id: i64,
    key: &str,
) -> Result<Option<i32>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT max(version) FROM list_series WHERE list_id = $1 AND series_key = $2",
        list_id,
        key
    )
    .fetch_one(db)
    .await
}

/// Whether a later version of `key` than `version` is on the list.
pub async fn has_later_version(
    db: impl PgExecutor<'_>,
    list_id: i64,
    key: &str,
    version: i32,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM list_series
                          WHERE list_id = $1 AND series_key = $2 AND version > $3) AS "x!""#,
        list_id,
        key,
        version
    )
    .fetch_one(db)
    .await
}

/// Series of list `list_id` in `state`, oldest first, locked (skipping
/// what another server holds).
pub async fn in_state(
    conn: &mut PgConnection,
    list_id: i64,
    state: SeriesState,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM list_series WHERE list_id = $1 AND state = $2
         ORDER BY id FOR UPDATE SKIP LOCKED",
        list_id,
        state.as_str()
    )
    .fetch_all(conn)
    .await
}

/// Waiting series of list `list_id` that miss patches and were last seen
/// more than `wait_minutes` ago, oldest first, locked (skipping what
/// another server holds). Asked in SQL: a list reading its history has
/// thousands of complete series waiting for a slot, none of them overdue.
pub async fn overdue(
    conn: &mut PgConnection,
    list_id: i64,
    wait_minutes: i32,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT id FROM list_series
         WHERE list_id = $1 AND state = 'waiting' AND cardinality(missing) > 0
           AND seen_at < now() - make_interval(mins => $2)
         ORDER BY id FOR UPDATE SKIP LOCKED",
        list_id,
        wait_minutes
    )
    .fetch_all(conn)
    .await
}

/// Locks series `id` for the rest of the transaction when it is in
/// `state`; whether it is (another server may have moved it meanwhile).
pub async fn lock_in_state(
    conn: &mut PgConnection,
    id: i64,
    state: SeriesState,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query_scalar!(
        "SELECT id FROM list_series WHERE id = $1 AND state = $2 FOR UPDATE",
        id,
        state.as_str()
    )
    .fetch_optional(conn)
    .await?
    .is_some())
}

/// How many series of the list are queued.
pub async fn in_flight(db: impl PgExecutor<'_>, list_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM list_series WHERE list_id = $1 AND state = 'queued'"#,
        list_id
    )
    .fetch_one(db)
    .await
}

/// How many replies the list sent (queued) in the last day.
pub async fn replies_today(db: impl PgExecutor<'_>, list_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM list_series
           WHERE list_id = $1 AND state = 'reported' AND updated_at > now() - interval '1 day'"#,
        list_id
    )
    .fetch_one(db)
    .await
}

/// Notes the reply to series `id`.
pub async fn reported(
    db: impl PgExecutor<'_>,
    id: i64,
    message_id: &str,
    reason: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_series SET state = 'reported', reply_message_id = $2, reason = $3,
                                updated_at = now()
         WHERE id = $1",
        id,
        message_id,
        reason
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The subject of the list series comparison `comparison_id` measures (its
/// cover letter's, else its first patch's), if one does.
pub async fn subject_of_comparison(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT subject FROM list_series WHERE comparison_id = $1 ORDER BY id LIMIT 1",
        comparison_id
    )
    .fetch_optional(db)
    .await
}

/// The list series comparison `comparison_id` measures, as (series id,
/// version, list id, list name), if one.
pub async fn of_comparison(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Option<(i64, i32, i64, String)>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT s.id, s.version, l.id AS list_id, l.name FROM list_series s
         JOIN lists l ON l.id = s.list_id
         WHERE s.comparison_id = $1 ORDER BY s.id LIMIT 1",
        comparison_id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.id, r.version, r.list_id, r.name)))
}
