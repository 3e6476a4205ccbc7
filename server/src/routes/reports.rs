//! `GET /api/v1/comparisons/{id}/report.txt`: the 0-day style text report,
//! as an email to the patch author would carry it.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::error::Result;
use crate::extract::Path;
use crate::{AppState, Error, db, report};

/// Routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/comparisons/{id}/report.txt", get(text))
}

async fn text(State(state): State<AppState>, Path(id): Path<i64>) -> Result<impl IntoResponse> {
    let c = db::comparisons::find(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    let built = report::load(&state, &c).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        report::verdict::text_report(&built),
    ))
}
