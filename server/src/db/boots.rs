//! `boots`: the boot order of each comparison.

use patchperf_common::run::Side;
use sqlx::{PgConnection, PgExecutor};

/// One boot of a comparison.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BootRow {
    /// Comparison-wide position.
    pub seq: i32,
    /// The job that performs it.
    pub job_id: i64,
    /// Which kernel it boots.
    pub side: Side,
}

/// Stores one planned boot.
pub async fn insert(
    conn: &mut PgConnection,
    comparison_id: i64,
    seq: i32,
    job_id: i64,
    side: Side,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO boots (comparison_id, seq, job_id, side) VALUES ($1, $2, $3, $4)",
        comparison_id,
        seq,
        job_id,
        side.as_str()
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The boots of a comparison in order.
pub async fn for_comparison(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<BootRow>, sqlx::Error> {
    of(db, Some(comparison_id), None).await
}

/// The boots a job performs, in order.
pub async fn for_job(db: impl PgExecutor<'_>, job_id: i64) -> Result<Vec<BootRow>, sqlx::Error> {
    of(db, None, Some(job_id)).await
}

/// The boots of comparison `comparison_id` or of job `job_id` (one of the
/// two given), in order.
async fn of(
    db: impl PgExecutor<'_>,
    comparison_id: Option<i64>,
    job_id: Option<i64>,
) -> Result<Vec<BootRow>, sqlx::Error> {
    sqlx::query_as!(
        BootRow,
        r#"SELECT seq, job_id, side AS "side: Side" FROM boots
           WHERE comparison_id = $1 OR job_id = $2 ORDER BY seq"#,
        comparison_id,
        job_id
    )
    .fetch_all(db)
    .await
}

/// Boots of comparisons `ids` whose jobs have not ended yet.
pub async fn left(db: impl PgExecutor<'_>, ids: &[i64]) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM boots b JOIN jobs j ON j.id = b.job_id
           WHERE b.comparison_id = ANY($1) AND j.state NOT IN ('done', 'failed')"#,
        ids
    )
    .fetch_one(db)
    .await
}
