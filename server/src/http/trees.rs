//! `/api/v1/trees`: add a tracked tree (ci or admin token), list and read
//! them, the push hook that makes the server look at a branch now, and a
//! metric's history. The watching itself is [`crate::domain::tree`].

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use patchperf_common::api::{
    HistoryQuery, HistoryView, PushResponse, TreeCreateRequest, TreeCreated, TreeSubmission,
    TreeView,
};
use patchperf_common::credentials::without_credentials;
use patchperf_common::protocol::ErrorBody;
use patchperf_common::run::TaskMode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::tree;
use crate::error::Result;
use crate::http::auth::{CiAuth, Reader};
use crate::http::extract::{Json, Path, Query};
use crate::{AppState, Error};

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
    let row = tree::find(&state, id).await?;
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

/// `GET /api/v1/trees` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TreeList {
    /// Every tracked tree, oldest first.
    pub trees: Vec<TreeView>,
}

/// List the tracked trees.
///
/// A webhook URL is shown whole only with a ci or admin token; otherwise
/// its scheme and host (`https://hooks.example.org/…`).
#[utoipa::path(
    get,
    path = "/api/v1/trees",
    responses((status = 200, description = "The trees.", body = TreeList))
)]
async fn list(State(state): State<AppState>, reader: Reader) -> Result<Json<TreeList>> {
    let mut trees = Vec::new();
    for t in tree::list(&state).await? {
        trees.push(shown(tree::view(&state, t), &reader));
    }
    Ok(Json(TreeList { trees }))
}

/// `view` as `reader` may see it: the webhook URL whole only to a ci or
/// admin token, since its user and password, path or query are commonly
/// the hook's secret; to anyone else its scheme and host. The tree's own
/// URL likewise, without the credentials it may carry.
fn shown(mut view: TreeView, reader: &Reader) -> TreeView {
    if !reader.is_ci_or_admin() {
        view.webhook_url = view.webhook_url.as_deref().map(webhook_host);
        view.url = without_credentials(&view.url);
    }
    view
}

/// `https://user:secret@hooks.example.org/T0/B1?k=v` →
/// `https://hooks.example.org/…`.
fn webhook_host(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map_or(String::new(), |p| format!(":{p}"));
            format!("{}://{}{port}/…", u.scheme(), u.host_str().unwrap_or(""))
        }
        Err(_) => "…".into(),
    }
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
async fn show(
    State(state): State<AppState>,
    reader: Reader,
    Path(id): Path<i64>,
) -> Result<Json<TreeView>> {
    Ok(Json(shown(
        tree::view(&state, tree::find(&state, id).await?),
        &reader,
    )))
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
    let tree::history::History { row: s, points } = tree::history::named(&state, id, &q).await?;
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
