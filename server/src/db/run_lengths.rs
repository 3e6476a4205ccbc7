//! `run_length_pending`: comparisons whose run length waits for the
//! measurement mode of the machine that claims them first
//! ([`crate::domain::jobs::run_length`]).

use patchperf_common::api::AskedParams;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// Marks comparison `id` as waiting for its mode, with the parameters as
/// `asked`.
pub async fn insert_pending(
    conn: &mut PgConnection,
    id: i64,
    asked: &AskedParams,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO run_length_pending (comparison_id, asked) VALUES ($1, $2)",
        id,
        Json(asked) as _
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether comparison `id` still waits for its mode to fix its run length.
pub async fn is_pending(db: impl PgExecutor<'_>, id: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM run_length_pending WHERE comparison_id = $1) AS "pending!""#,
        id
    )
    .fetch_one(db)
    .await
}

/// Takes comparison `id` off the pending list, returning what it asked;
/// none when it was not on it (or another claim took it first).
pub async fn take(conn: &mut PgConnection, id: i64) -> Result<Option<AskedParams>, sqlx::Error> {
    let asked = sqlx::query_scalar!(
        r#"DELETE FROM run_length_pending WHERE comparison_id = $1
           RETURNING asked AS "asked: Json<AskedParams>""#,
        id
    )
    .fetch_optional(conn)
    .await?;
    Ok(asked.map(|a| a.0))
}
