//! The overall verdict and dashboard headline of finished comparisons
//! (columns of `comparisons`, and the headline's columns in
//! `comparison_headlines`), stored by the report builder so that listings
//! filter and sort by verdict without building reports.

use patchperf_common::comparison::OverallVerdict;
use patchperf_common::report::importance::HeadlineColumns;
use sqlx::PgPool;
use sqlx::types::Json;

/// Stores a finished comparison's overall verdict, dashboard headline and
/// its columns (none: nothing measured).
pub async fn store(
    db: &PgPool,
    id: i64,
    verdict: OverallVerdict,
    headline: &str,
    columns: Option<&HeadlineColumns>,
) -> Result<(), sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query!(
        "UPDATE comparisons SET verdict = $2, headline = $3, change_size = $4 WHERE id = $1",
        id,
        verdict.as_str(),
        headline,
        columns.and_then(|c| c.size)
    )
    .execute(&mut *tx)
    .await?;
    match columns {
        Some(columns) => {
            sqlx::query!(
                "INSERT INTO comparison_headlines (comparison_id, columns) VALUES ($1, $2)
                 ON CONFLICT (comparison_id) DO UPDATE SET columns = EXCLUDED.columns",
                id,
                Json(columns) as _
            )
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query!(
                "DELETE FROM comparison_headlines WHERE comparison_id = $1",
                id
            )
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await
}
