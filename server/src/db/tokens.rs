//! `tokens`: API tokens by the sha256 of their text.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

/// A token as the authentication check needs it.
#[derive(Debug, Clone)]
pub struct TokenRow {
    /// Row id.
    pub id: i64,
    /// `runner`, `ci` or `admin`.
    pub kind: String,
    /// Operator-given name.
    pub name: String,
    /// Whether it was revoked.
    pub revoked: bool,
}

/// A token as listed for operators (never with its text: we do not have it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct TokenListing {
    /// Row id.
    pub id: i64,
    /// `runner`, `ci` or `admin`.
    pub kind: String,
    /// Operator-given name.
    pub name: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Stores a new token's hash; returns its id.
pub async fn insert(
    conn: &mut PgConnection,
    kind: &str,
    name: &str,
    sha256: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO tokens (kind, name, sha256) VALUES ($1, $2, $3) RETURNING id",
        kind,
        name,
        sha256
    )
    .fetch_one(conn)
    .await
}

/// The token whose text hashes to `sha256`.
pub async fn find_by_hash(
    db: impl PgExecutor<'_>,
    sha256: &str,
) -> Result<Option<TokenRow>, sqlx::Error> {
    sqlx::query_as!(
        TokenRow,
        r#"SELECT id, kind, name, revoked_at IS NOT NULL AS "revoked!"
           FROM tokens WHERE sha256 = $1"#,
        sha256
    )
    .fetch_optional(db)
    .await
}

/// Every token, oldest first.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<TokenListing>, sqlx::Error> {
    sqlx::query_as!(
        TokenListing,
        "SELECT id, kind, name, created_at, revoked_at FROM tokens ORDER BY id"
    )
    .fetch_all(db)
    .await
}

/// Revokes a token; `false` when there is no such token. Revoking twice
/// keeps the first time.
pub async fn revoke(conn: &mut PgConnection, id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1",
        id
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
