//! `patch_series` and `patches`: submitted mboxes and their messages.

use sqlx::{PgConnection, PgExecutor};

use patchperf_common::mbox::Series;

/// One message of a stored series.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PatchRow {
    /// 0-based position in the mbox.
    pub position: i32,
    /// `Subject:` header, unfolded and decoded.
    pub subject: String,
    /// `Message-ID:` without angle brackets, if present.
    pub message_id: Option<String>,
    /// `From:` header.
    pub author: String,
    /// Whether the message carries a diff (a cover letter does not).
    pub has_diff: bool,
}

/// Stores a parsed series, or finds the identical one stored before;
/// returns the series id.
pub async fn insert_series(
    conn: &mut PgConnection,
    mbox: &str,
    series: &Series,
) -> Result<i64, sqlx::Error> {
    let inserted = sqlx::query_scalar!(
        "INSERT INTO patch_series (sha256, mbox) VALUES ($1, $2)
         ON CONFLICT (sha256) DO NOTHING RETURNING id",
        series.sha256,
        mbox
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = inserted else {
        return sqlx::query_scalar!(
            "SELECT id FROM patch_series WHERE sha256 = $1",
            series.sha256
        )
        .fetch_one(&mut *conn)
        .await;
    };
    for (position, msg) in series.messages.iter().enumerate() {
        sqlx::query!(
            "INSERT INTO patches (series_id, position, subject, message_id, author, has_diff)
             VALUES ($1, $2, $3, $4, $5, $6)",
            id,
            i32::try_from(position).unwrap_or(i32::MAX),
            msg.subject,
            msg.message_id,
            msg.author,
            msg.has_diff
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(id)
}

/// The messages of a series in mbox order.
pub async fn messages(
    db: impl PgExecutor<'_>,
    series_id: i64,
) -> Result<Vec<PatchRow>, sqlx::Error> {
    sqlx::query_as!(
        PatchRow,
        "SELECT position, subject, message_id, author, has_diff
         FROM patches WHERE series_id = $1 ORDER BY position",
        series_id
    )
    .fetch_all(db)
    .await
}

/// The mbox text and its sha256.
pub async fn mbox(
    db: impl PgExecutor<'_>,
    series_id: i64,
) -> Result<(String, String), sqlx::Error> {
    let row = sqlx::query!(
        "SELECT mbox, sha256 FROM patch_series WHERE id = $1",
        series_id
    )
    .fetch_one(db)
    .await?;
    Ok((row.mbox, row.sha256))
}

/// sha256 of a stored patch series (without loading the mbox).
pub async fn series_sha256(db: impl PgExecutor<'_>, series_id: i64) -> Result<String, sqlx::Error> {
    sqlx::query_scalar!("SELECT sha256 FROM patch_series WHERE id = $1", series_id)
        .fetch_one(db)
        .await
}
