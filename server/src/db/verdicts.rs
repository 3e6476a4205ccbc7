//! The overall verdict and dashboard headline of finished comparisons
//! (columns of `comparisons`), stored by the report builder so that
//! listings filter and sort by verdict without building reports.

use patchperf_common::comparison::OverallVerdict;
use sqlx::PgExecutor;

/// Stores a finished comparison's overall verdict and dashboard headline.
pub async fn store(
    db: impl PgExecutor<'_>,
    id: i64,
    verdict: OverallVerdict,
    headline: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE comparisons SET verdict = $2, headline = $3 WHERE id = $1",
        id,
        verdict.as_str(),
        headline
    )
    .execute(db)
    .await?;
    Ok(())
}
