//! `/api/v1/bisections`: start a bisection (ci token), read one, list
//! them, cancel one. The search itself is [`crate::domain::bisection`].

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use patchperf_common::api::{
    BisectionCreateRequest, BisectionCreated, BisectionStatus, BisectionSubmission, BisectionView,
};
use patchperf_common::protocol::ErrorBody;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::bisections::BisectionSummary;
use crate::domain::bisection;
use crate::error::Result;
use crate::http::auth::CiAuth;
use crate::http::extract::{Json, Path, Query};
use crate::{AppState, Error};

/// The bisection routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(cancel))
}

/// Start a bisection.
///
/// Requires a ci token (or an admin token). Give a git base at the good
/// commit and the bad commit (the server reads the first-parent commits
/// between them from the repository), or a finished comparison whose
/// series to bisect; and the workload (with `params` naming the one mode
/// and nr_task) whose metric moved. Each probe is a comparison of the good
/// end against one commit, on one machine; the first checks that the ends
/// differ. Answers `201` with the bisection's links.
#[utoipa::path(
    post,
    path = "/api/v1/bisections",
    request_body = BisectionCreateRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Started; the first probe is queued.", body = BisectionCreated),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such comparison.", body = ErrorBody),
        (status = 409, description = "The comparison is not done yet.", body = ErrorBody),
        (status = 422, description = "Invalid content; the message says why.", body = ErrorBody),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: CiAuth,
    Json(req): Json<BisectionCreateRequest>,
) -> Result<impl IntoResponse> {
    let req = BisectionSubmission::try_from(req)
        .map_err(|invalid| Error::Invalid(invalid.to_string()))?;
    let id = bisection::create(&state, auth.caller.token_id, &req).await?;
    let url = state.config.link(&format!("/api/v1/bisections/{id}"));
    tracing::info!(bisection = id, by = %auth.caller.name, "bisection submitted");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, url.clone())],
        Json(BisectionCreated {
            id,
            url,
            page_url: state.config.link(&format!("/bisections/{id}")),
        }),
    ))
}

/// A bisection: its series, every probe with its verdict on the metric,
/// and the answer once there is one.
#[utoipa::path(
    get,
    path = "/api/v1/bisections/{id}",
    params(("id" = i64, Path, description = "Bisection id.")),
    responses(
        (status = 200, description = "The bisection.", body = BisectionView),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 404, description = "No such bisection.", body = ErrorBody),
    )
)]
async fn show(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Json<BisectionView>> {
    Ok(Json(bisection::find(&state, id).await?))
}

/// `GET /api/v1/bisections` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BisectionListQuery {
    /// Page size, 1–500 (50 by default).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Only bisections with a smaller id (the `next_before` of the previous
    /// page).
    pub before: Option<i64>,
}

/// `GET /api/v1/bisections` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BisectionList {
    /// Newest first. Each bisection: id, status, workload, metric,
    /// git_range (or comparison_id, the comparison it started from),
    /// probes made, created_at, and its outcome once it has one.
    #[schema(value_type = Vec<Object>)]
    pub bisections: Vec<BisectionSummary>,
    /// Pass as `before` for the next page; absent on the last page.
    pub next_before: Option<i64>,
}

/// List bisections, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/bisections",
    params(BisectionListQuery),
    responses(
        (status = 200, description = "A page of bisections.", body = BisectionList),
        (status = 400, description = "The page size is not allowed.", body = ErrorBody),
    )
)]
async fn list(
    State(state): State<AppState>,
    Query(q): Query<BisectionListQuery>,
) -> Result<Json<BisectionList>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Error::Malformed(format!("limit {limit} must be 1 to 500")));
    }
    let bisections = bisection::list(&state, q.before, limit).await?;
    let next_before = if bisections.len() == usize::try_from(limit).unwrap_or(usize::MAX) {
        bisections.last().map(|b| b.id)
    } else {
        None
    };
    Ok(Json(BisectionList {
        bisections,
        next_before,
    }))
}

/// `POST /api/v1/bisections/{id}/cancel` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BisectionCancelled {
    /// Bisection id.
    pub id: i64,
    /// Now `cancelled`.
    pub status: BisectionStatus,
}

/// Cancel a bisection and its unfinished probe.
///
/// Requires a ci token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/bisections/{id}/cancel",
    params(("id" = i64, Path, description = "Bisection id.")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Cancelled.", body = BisectionCancelled),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such bisection.", body = ErrorBody),
        (status = 409, description = "The bisection already ended.", body = ErrorBody),
    )
)]
async fn cancel(
    State(state): State<AppState>,
    auth: CiAuth,
    Path(id): Path<i64>,
) -> Result<Json<BisectionCancelled>> {
    bisection::cancel(&state, id, &auth.caller.name).await?;
    tracing::info!(bisection = id, by = %auth.caller.name, "bisection cancelled");
    Ok(Json(BisectionCancelled {
        id,
        status: BisectionStatus::Cancelled,
    }))
}
