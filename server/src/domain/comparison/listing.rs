//! Comparisons listed, as the dashboard, a machine's page and
//! `GET /api/v1/comparisons` list them: a page of summaries by one filter
//! and order (the query itself is `db::comparisons::listing`'s), and how
//! far the unfinished ones among them have come.

/// A listing's rows, its filter and order, and a running one's progress.
pub use crate::db::comparisons::{ComparisonSummary, ListFilter, ListOrder};
pub use crate::db::progress::Progress;
use crate::domain::Context;
use crate::{Error, db};

/// The comparisons `filter` asks for, in its order.
pub async fn list(ctx: &Context, filter: &ListFilter<'_>) -> Result<Vec<ComparisonSummary>, Error> {
    Ok(db::comparisons::list(&ctx.db, filter).await?)
}

/// How far each of the comparisons `ids` has come, in no particular order.
pub async fn progress(ctx: &Context, ids: &[i64]) -> Result<Vec<Progress>, Error> {
    Ok(db::progress::of_comparisons(&ctx.db, ids).await?)
}
