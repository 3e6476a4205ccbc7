//! `GET /api/v1/comparisons/{id}/report.txt`: the 0-day style text report,
//! as an email to the patch author would carry it.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use patchperf_common::protocol::ErrorBody;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::report;
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error, db};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(text))
}

/// The 0-day style text report (one table per workload, mode and nr_task).
#[utoipa::path(
    get,
    path = "/api/v1/comparisons/{id}/report.txt",
    params(("id" = i64, Path, description = "Comparison id.")),
    responses(
        (status = 200, description = "The report.", body = String, content_type = "text/plain"),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 404, description = "No such comparison.", body = ErrorBody),
        (status = 503, description = "Computing the report took longer than the server allows.", body = ErrorBody),
    )
)]
async fn text(State(state): State<AppState>, Path(id): Path<i64>) -> Result<impl IntoResponse> {
    let c = db::comparisons::find(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    let text = report::verdict::text(&state, &c).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_string(),
    ))
}
