//! `list_messages`: every message a list received, raw as it came and as
//! read at the door (`parsed`, by reader edition `read_edition`), with the
//! thread it belongs to; `pending` marks threads to assemble again.

use sqlx::{PgConnection, PgExecutor};

/// A message to store: its raw bytes and their reading.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    /// Its Message-ID.
    pub message_id: &'a str,
    /// The Message-ID of its thread's root.
    pub thread_root: &'a str,
    /// The bytes as they came.
    pub raw: &'a [u8],
    /// Their reading, serialized.
    pub parsed: &'a serde_json::Value,
    /// The edition of the reader that read them.
    pub read_edition: i16,
}

/// Stores a message unless the list has it; whether it was new. A new
/// message marks its thread pending.
pub async fn insert(
    conn: &mut PgConnection,
    list_id: i64,
    m: &NewMessage<'_>,
) -> Result<bool, sqlx::Error> {
    let id = sqlx::query_scalar!(
        "INSERT INTO list_messages (list_id, message_id, thread_root, raw, parsed, read_edition)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (list_id, message_id) DO NOTHING
         RETURNING id",
        list_id,
        m.message_id,
        m.thread_root,
        m.raw,
        m.parsed,
        m.read_edition
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

/// A stored message of a thread: its reading when the reader of edition
/// `edition` made it, else its raw bytes to read again.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// Row id.
    pub id: i64,
    /// Its reading (JSON), when of the edition asked for.
    pub parsed: Option<String>,
    /// Its raw bytes, when its reading is missing or of another edition.
    pub raw: Option<Vec<u8>>,
}

/// The messages of a thread, in arrival order: at most `limit`, and the
/// first ones only that together came as at most `max_bytes`; each as
/// read by reader edition `edition`, else raw.
pub async fn thread(
    db: impl PgExecutor<'_>,
    list_id: i64,
    thread_root: &str,
    edition: i16,
    limit: i64,
    max_bytes: i64,
) -> Result<Vec<StoredMessage>, sqlx::Error> {
    sqlx::query_as!(
        StoredMessage,
        r#"SELECT id AS "id!",
                  CASE WHEN read_edition = $3 THEN parsed::text END AS parsed,
                  CASE WHEN read_edition = $3 AND parsed IS NOT NULL THEN NULL ELSE raw END
                      AS raw
           FROM (
               SELECT id, raw, parsed, read_edition,
                      sum(length(raw)) OVER (ORDER BY id) AS total
               FROM list_messages WHERE list_id = $1 AND thread_root = $2
           ) t
           WHERE total <= $5
           ORDER BY id LIMIT $4"#,
        list_id,
        thread_root,
        edition,
        limit,
        max_bytes
    )
    .fetch_all(db)
    .await
}

/// Stores message `id`'s reading by reader edition `edition` (a message
/// stored by an older reader, read again).
pub async fn read_again(
    db: impl PgExecutor<'_>,
    id: i64,
    parsed: &serde_json::Value,
    edition: i16,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE list_messages SET parsed = $2, read_edition = $3 WHERE id = $1",
        id,
        parsed,
        edition
    )
    .execute(db)
    .await?;
    Ok(())
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

/// The raw bytes of message `id`.
pub async fn raw(db: impl PgExecutor<'_>, id: i64) -> Result<Vec<u8>, sqlx::Error> {
    sqlx::query_scalar!("SELECT raw FROM list_messages WHERE id = $1", id)
        .fetch_one(db)
        .await
}
