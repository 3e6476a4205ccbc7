//! `/api/v1/trees`: add a tracked tree (ci or admin token), list and read
//! them, the push hook that makes the server look at a branch now, and a
//! metric's history. The watching itself is [`crate::domain::tree`].

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use patchperf_common::api::{
    HistoryView, PushResponse, TreeCreateRequest, TreeCreated, TreeSubmission, TreeView,
};
use patchperf_common::protocol::ErrorBody;
use patchperf_common::run::TaskMode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::history::SeriesRow;
use crate::domain::tree;
use crate::error::Result;
use crate::http::auth::CiAuth;
use crate::http::extract::{Json, Path, Query};
use crate::{AppState, Error, db};

/// The tree routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(push))
        .routes(routes!(history))
}

/// Track a branch.
///
/// Requires a ci token (or an admin token). The server notes the branch's
/// head now; every later head (seen by its poll every few minutes, or at
/// once through `POST /api/v1/trees/{id}/push`) is measured against the
/// last one tested as a git range comparison, one step per commit.
#[utoipa::path(
    post,
    path = "/api/v1/trees",
    request_body = TreeCreateRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Tracked from the branch's head.", body = TreeCreated),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 409, description = "A tree of that name exists.", body = ErrorBody),
        (status = 422, description = "Invalid content, or the branch cannot be read.", body = ErrorBody),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: CiAuth,
    Json(req): Json<TreeCreateRequest>,
) -> Result<impl IntoResponse> {
    let req =
        TreeSubmission::try_from(req).map_err(|invalid| Error::Invalid(invalid.to_string()))?;
    let id = tree::create(&state, auth.caller.token_id, &req).await?;
    let row = find(&state, id).await?;
    let url = state.config.link(&format!("/api/v1/trees/{id}"));
    tracing::info!(tree = id, by = %auth.caller.name, "tree added");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, url.clone())],
        Json(TreeCreated {
            tree: tree::view(&state, row),
            url,
        }),
    ))
}

/// Tree `id`, or a 404.
pub(crate) async fn find(state: &AppState, id: i64) -> Result<db::trees::TreeRow> {
    let mut conn = state.db.acquire().await?;
    db::trees::find(&mut conn, id, false)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no tree {id}")))
}

/// `GET /api/v1/trees` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TreeList {
    /// Every tracked tree, oldest first.
    pub trees: Vec<TreeView>,
}

/// List the tracked trees.
#[utoipa::path(
    get,
    path = "/api/v1/trees",
    responses((status = 200, description = "The trees.", body = TreeList))
)]
async fn list(State(state): State<AppState>) -> Result<Json<TreeList>> {
    let mut trees = Vec::new();
    for id in db::trees::ids(&state.db).await? {
        trees.push(tree::view(&state, find(&state, id).await?));
    }
    Ok(Json(TreeList { trees }))
}

/// A tracked tree.
#[utoipa::path(
    get,
    path = "/api/v1/trees/{id}",
    params(("id" = i64, Path, description = "Tree id.")),
    responses(
        (status = 200, description = "The tree.", body = TreeView),
        (status = 404, description = "No such tree.", body = ErrorBody),
    )
)]
async fn show(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Json<TreeView>> {
    Ok(Json(tree::view(&state, find(&state, id).await?)))
}

/// The push hook: look at the branch now.
///
/// Requires a ci token (or an admin token): what a forge's or CI's hook
/// calls after a push. A new head is queued at once (unless the tree's
/// `min_hours` says it is too soon); the answer says what happened.
#[utoipa::path(
    post,
    path = "/api/v1/trees/{id}/push",
    params(("id" = i64, Path, description = "Tree id.")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "What looking at the branch did.", body = PushResponse),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such tree.", body = ErrorBody),
        (status = 422, description = "The branch cannot be read or its new commits measured.", body = ErrorBody),
    )
)]
async fn push(
    State(state): State<AppState>,
    _auth: CiAuth,
    Path(id): Path<i64>,
) -> Result<Json<PushResponse>> {
    Ok(Json(tree::poll(&state, id).await?))
}

/// `GET /api/v1/trees/{id}/history` query: which history. Each part may be
/// left out when the tree has only one value for it.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Workload.
    pub workload: Option<String>,
    /// `process` or `thread`.
    pub mode: Option<String>,
    /// Tasks.
    pub nr_task: Option<i32>,
    /// Metric (the headline, `will-it-scale.per_process_ops`, is recorded).
    pub metric: Option<String>,
    /// Machine name.
    pub machine: Option<String>,
    /// Measurement mode (`tcg-icount`, `kvm`, …).
    pub measurement: Option<String>,
}

/// A metric's history on a tree: one point per tested commit.
#[utoipa::path(
    get,
    path = "/api/v1/trees/{id}/history",
    params(("id" = i64, Path, description = "Tree id."), HistoryQuery),
    responses(
        (status = 200, description = "The history, oldest commit first.", body = HistoryView),
        (status = 400, description = "The query names several histories or none; the message lists them.", body = ErrorBody),
        (status = 404, description = "No such tree.", body = ErrorBody),
    )
)]
async fn history(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<HistoryQuery>,
) -> Result<Json<HistoryView>> {
    find(&state, id).await?;
    let all = db::history::series(&state.db, id).await?;
    let s = pick_history(id, &all, &q)?;
    let points = db::history::points(&state.db, s.key(id)).await?;
    Ok(Json(HistoryView {
        tree_id: id,
        workload: s.workload.clone(),
        mode: if s.mode == TaskMode::Thread.as_str() {
            TaskMode::Thread
        } else {
            TaskMode::Process
        },
        nr_task: s.nr_task,
        metric: s.metric.clone(),
        machine: s.machine.clone(),
        measurement: s.measurement.clone(),
        points,
    }))
}

/// The one history of tree `id` that `q` names (a part left out matches
/// any value), or a 400 that lists the histories there are.
pub(crate) fn pick_history<'a>(
    id: i64,
    all: &'a [SeriesRow],
    q: &HistoryQuery,
) -> Result<&'a SeriesRow> {
    let matching: Vec<_> = all
        .iter()
        .filter(|s| {
            q.workload.as_ref().is_none_or(|w| *w == s.workload)
                && q.mode.as_ref().is_none_or(|m| *m == s.mode)
                && q.nr_task.is_none_or(|n| n == s.nr_task)
                && q.metric.as_ref().is_none_or(|m| *m == s.metric)
                && q.machine.as_ref().is_none_or(|m| *m == s.machine)
                && q.measurement.as_ref().is_none_or(|m| *m == s.measurement)
        })
        .collect();
    let [s] = matching.as_slice() else {
        let listed: Vec<String> = all.iter().map(history_query).collect();
        let what = if matching.is_empty() {
            "no history"
        } else {
            "several histories"
        };
        return Err(Error::Malformed(if listed.is_empty() {
            format!("tree {id} has no history yet")
        } else {
            format!(
                "the query names {what}; tree {id} has: {}",
                listed.join(", ")
            )
        }));
    };
    Ok(s)
}

/// The query naming history `s`: `workload=open1&mode=process&…`.
pub(crate) fn history_query(s: &SeriesRow) -> String {
    format!(
        "workload={}&mode={}&nr_task={}&metric={}&machine={}&measurement={}",
        s.workload, s.mode, s.nr_task, s.metric, s.machine, s.measurement
    )
}
