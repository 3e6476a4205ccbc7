//! `/api/v1/changes`: the change points found in tracked trees' histories,
//! newest first, and marking one acknowledged or expected (admin token).

use axum::extract::State;
use patchperf_common::api::ChangeState;
use patchperf_common::protocol::ErrorBody;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::db::changes::{ChangeFilter, ChangeRow};
use crate::domain::tree::triage;
use crate::error::{Error, Result};
use crate::http::auth::AdminAuth;
use crate::http::extract::{Json, Path, Query};

/// The change point routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(acknowledge))
}

/// `GET /api/v1/changes` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangeListQuery {
    /// Of this tree only.
    pub tree: Option<i64>,
    /// open, acknowledged or expected.
    pub state: Option<String>,
    /// Page size, 1–500 (50 by default).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Only change points with a smaller id (the `next_before` of the
    /// previous page).
    pub before: Option<i64>,
}

/// `GET /api/v1/changes` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeList {
    /// Newest first. Each: id, tree, machine, measurement, workload, mode,
    /// nr_task, metric, the commit (position, sha, subject, author) and the
    /// last one before it (from_position), mean_before, mean_after,
    /// change_percent with its 95% interval (low, high), p, verdict, the
    /// comparison that measured it, the bisection started for it, state
    /// and note, and who marked it (`acknowledged_by`, the token's name)
    /// and when (`acknowledged_at`).
    #[schema(value_type = Vec<Object>)]
    pub changes: Vec<ChangeRow>,
    /// Pass as `before` for the next page; absent on the last page.
    pub next_before: Option<i64>,
}

/// List change points, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/changes",
    params(ChangeListQuery),
    responses(
        (status = 200, description = "A page of change points.", body = ChangeList),
        (status = 400, description = "A filter or the page size is not allowed.", body = ErrorBody),
    )
)]
async fn list(
    State(state): State<AppState>,
    Query(q): Query<ChangeListQuery>,
) -> Result<Json<ChangeList>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Error::Malformed(format!("limit {limit} must be 1 to 500")));
    }
    let wanted = super::listing::one_of(
        "state",
        q.state.as_deref(),
        ChangeState::ALL,
        ChangeState::as_str,
    )?;
    let changes = triage::list(
        &state,
        ChangeFilter {
            tree_id: q.tree,
            state: wanted,
            before: q.before,
            limit,
        },
    )
    .await?;
    let next_before = if changes.len() == usize::try_from(limit).unwrap_or(usize::MAX) {
        changes.last().map(|c| c.id)
    } else {
        None
    };
    Ok(Json(ChangeList {
        changes,
        next_before,
    }))
}

/// `POST /api/v1/changes/{id}/acknowledge` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcknowledgeRequest {
    /// `acknowledged` (seen, being handled) or `expected` (the change was
    /// meant; not a regression to chase).
    pub state: String,
    /// Why, for the next reader (at most 2000 characters).
    #[serde(default)]
    pub note: String,
}

/// `POST /api/v1/changes/{id}/acknowledge` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Acknowledged {
    /// The change point.
    pub id: i64,
    /// Its state now.
    pub state: ChangeState,
}

/// Acknowledge a change point, or mark it expected, with a note.
///
/// Requires an admin token. It leaves the dashboard's open list.
#[utoipa::path(
    post,
    path = "/api/v1/changes/{id}/acknowledge",
    params(("id" = i64, Path, description = "Change point id.")),
    request_body = AcknowledgeRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Marked.", body = Acknowledged),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such change point.", body = ErrorBody),
        (status = 422, description = "Not a state it can be marked with, or the note is too long.", body = ErrorBody),
    )
)]
async fn acknowledge(
    State(state): State<AppState>,
    auth: AdminAuth,
    Path(id): Path<i64>,
    Json(req): Json<AcknowledgeRequest>,
) -> Result<Json<Acknowledged>> {
    let marked = triage::acknowledge(&state, &auth.caller, id, &req.state, &req.note).await?;
    Ok(Json(Acknowledged { id, state: marked }))
}
