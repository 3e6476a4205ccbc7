//! `list_messages`: every message a list received, raw as it came, with
//! the thread it belongs to; `pending` marks threads to assemble again.

use sqlx::{PgConnection, PgExecutor};

/// Stores a message unless the list has it; whether it was new. A new
/// message marks its thread pending.
pub async fn insert(
    conn: &mut PgConnection,
    list_id: i64,
    message_id: &str,
    thread_root: &str,
    raw: &[u8],
) -> Result<bool, sqlx::Error> {
    let id = sqlx::query_scalar!(
        "INSERT INTO list_messages (list_id, message_id, thread_root, raw)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (list_id, message_id) DO NOTHING
         RETURNING id",
        list_id,
        message_id,
        thread_root,
        raw
    )
    .fetch_optional(conn)
    .await?;
    Ok(id.is_some())
}

/// The thread roots of list `list_id` with messages not assembled yet.
pub async fn pending_threads(
    db: impl PgExecutor<'_>,
    list_id: i64,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT DISTINCT thread_root FROM list_messages WHERE list_id = $1 AND pending",
        list_id
    )
    .fetch_all(db)
    .await
}

/// The raw messages of a thread, in arrival order: at most `limit`, and
/// the first ones only that together take at most `max_bytes`.
pub async fn thread(
    db: impl PgExecutor<'_>,
    list_id: i64,
    thread_root: &str,
    limit: i64,
    max_bytes: i64,
) -> Result<Vec<Vec<u8>>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT raw AS "raw!" FROM (
               SELECT id, raw, sum(length(raw)) OVER (ORDER BY id) AS total
               FROM list_messages WHERE list_id = $1 AND thread_root = $2
           ) t
           WHERE total <= $4
           ORDER BY id LIMIT $3"#,
        list_id,
        thread_root,
        limit,
        max_bytes
    )
    .fetch_all(db)
    .await
}

/// The thread a message of the list is in, when the list has it.
pub async fn thread_of(
    db: impl PgExecutor<'_>,
    list_id: i64,
    message_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT thread_root FROM list_messages WHERE list_id = $1 AND message_id = $2",
        list_id,
        message_id
    )
    .fetch_optional(db)
    .await
}

/// Marks a thread assembled.
pub async fn assembled(
    db: impl PgExecutor<'_>,
    list_id: i64,
    thread_root: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_messages SET pending = false
         WHERE list_id = $1 AND thread_root = $2 AND pending",
        list_id,
        thread_root
    )
    .execute(db)
    .await?;
    Ok(())
}
