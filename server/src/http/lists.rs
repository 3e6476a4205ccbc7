//! `/api/v1/lists` and `/api/v1/series`: follow a mailing list (ci token
//! to add, admin to remove), hand it raw mail, push its archive hook, and
//! read its series. What following does is [`crate::domain::lists`].

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use patchperf_common::api::{
    ListCreateRequest, ListSubmission, ListView, MessagesTaken, SeriesListQuery, SeriesView,
};
use patchperf_common::protocol::ErrorBody;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::lists::ListRow;
use crate::domain::lists;
use crate::error::Result;
use crate::http::auth::{AdminAuth, CiAuth, Reader};
use crate::http::extract::{Json, Path, Query};
use crate::{AppState, Error};

/// The list routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show, remove))
        .routes(routes!(messages))
        .routes(routes!(push))
        .routes(routes!(series))
        .routes(routes!(one_series))
}

/// Follow a mailing list.
///
/// Requires a ci token (or an admin token). With `archive_url` (a
/// public-inbox archive, as lore.kernel.org serves them) the server reads
/// every new message every `poll_minutes` and at once on
/// `POST /api/v1/lists/{id}/push`; without, mail comes through
/// `POST /api/v1/lists/{id}/messages`. Each complete patch series touching
/// the list's paths is measured patch by patch and answered in its thread.
#[utoipa::path(
    post,
    path = "/api/v1/lists",
    request_body = ListCreateRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Followed.", body = ListView),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 409, description = "A list of that name exists.", body = ErrorBody),
        (status = 422, description = "Invalid content.", body = ErrorBody),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: CiAuth,
    Json(req): Json<ListCreateRequest>,
) -> Result<impl IntoResponse> {
    let req = ListSubmission::try_from(req).map_err(|e| Error::Invalid(e.to_string()))?;
    let id = lists::create(&state, auth.caller.token_id, &req).await?;
    let view = lists::view(&state, lists::find(&state, id).await?);
    let url = state.config.link(&format!("/api/v1/lists/{id}"));
    tracing::info!(list = id, by = %auth.caller.name, "list followed");
    Ok((StatusCode::CREATED, [(header::LOCATION, url)], Json(view)))
}

/// `GET /api/v1/lists` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListList {
    /// Every list followed, by name.
    pub lists: Vec<ListView>,
}

/// The lists followed.
#[utoipa::path(
    get,
    path = "/api/v1/lists",
    responses((status = 200, description = "The lists.", body = ListList))
)]
async fn list(State(state): State<AppState>, reader: Reader) -> Result<Json<ListList>> {
    let lists = lists::all(&state)
        .await?
        .into_iter()
        .map(|l| shown(&state, l, &reader))
        .collect();
    Ok(Json(ListList { lists }))
}

/// A list followed.
#[utoipa::path(
    get,
    path = "/api/v1/lists/{id}",
    params(("id" = i64, Path, description = "List id.")),
    responses(
        (status = 200, description = "The list.", body = ListView),
        (status = 404, description = "No such list.", body = ErrorBody),
    )
)]
async fn show(
    State(state): State<AppState>,
    reader: Reader,
    Path(id): Path<i64>,
) -> Result<Json<ListView>> {
    Ok(Json(shown(&state, lists::find(&state, id).await?, &reader)))
}

/// List `l` as `reader` may see it: the archive's URL whole only to a ci
/// or admin token (who may have to check it), to anyone else without the
/// credentials it may carry.
fn shown(state: &AppState, l: ListRow, reader: &Reader) -> ListView {
    let whole = l.archive_url.clone();
    let mut view = lists::view(state, l);
    if reader.is_ci_or_admin() {
        view.archive_url = whole;
    }
    view
}

/// Stop following a list.
///
/// Requires an admin token. Its messages and series go; the comparisons
/// that measured them stay.
#[utoipa::path(
    delete,
    path = "/api/v1/lists/{id}",
    params(("id" = i64, Path, description = "List id.")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Removed."),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such list.", body = ErrorBody),
    )
)]
async fn remove(
    State(state): State<AppState>,
    auth: AdminAuth,
    Path(id): Path<i64>,
) -> Result<StatusCode> {
    lists::delete(&state, id).await?;
    tracing::info!(list = id, by = %auth.caller.name, "list removed");
    Ok(StatusCode::NO_CONTENT)
}

/// Hand a list raw mail.
///
/// Requires a ci token (or an admin token): what an MTA pipe, `lei` or a
/// mail filter calls. The body is one message (`message/rfc822`) or an
/// mbox (`application/mbox`); each message is read and stored, or refused
/// saying why, and its thread assembled again.
#[utoipa::path(
    post,
    path = "/api/v1/lists/{id}/messages",
    params(("id" = i64, Path, description = "List id.")),
    request_body(content = String, content_type = "message/rfc822"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "What was stored and refused.", body = MessagesTaken),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such list.", body = ErrorBody),
        (status = 400, description = "Not mail: another Content-Type.", body = ErrorBody),
        (status = 413, description = "Larger than the server takes.", body = ErrorBody),
        (status = 422, description = "No message in the body.", body = ErrorBody),
        (status = 429, description = "This token (or every caller) has as much mail being stored as the server takes at once; `Retry-After` says when to try again.", body = ErrorBody),
    )
)]
async fn messages(
    State(state): State<AppState>,
    auth: CiAuth,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<MessagesTaken>> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if !matches!(
        kind.as_str(),
        "message/rfc822" | "application/mbox" | "text/plain"
    ) {
        return Err(Error::Malformed(format!(
            "send message/rfc822 (one message) or application/mbox, not {kind:?}"
        )));
    }
    lists::find(&state, id).await?;
    let _admitted = state.intake.enter(auth.caller.token_id)?;
    Ok(Json(lists::intake::take(&state, id, &body).await?))
}

/// `POST /api/v1/lists/{id}/push` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListPushed {
    /// New messages read from the archive.
    pub messages: usize,
}

/// The archive's hook: read it now.
///
/// Requires a ci token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/lists/{id}/push",
    params(("id" = i64, Path, description = "List id.")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The archive was read.", body = ListPushed),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such list.", body = ErrorBody),
        (status = 422, description = "The list has no archive, or it cannot be read.", body = ErrorBody),
    )
)]
async fn push(
    State(state): State<AppState>,
    _auth: CiAuth,
    Path(id): Path<i64>,
) -> Result<Json<ListPushed>> {
    Ok(Json(ListPushed {
        messages: lists::push(&state, id).await?,
    }))
}

/// `GET /api/v1/series` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeriesList {
    /// Series versions, newest first.
    pub series: Vec<SeriesView>,
}

/// Series posted to the lists followed.
#[utoipa::path(
    get,
    path = "/api/v1/series",
    params(SeriesListQuery),
    responses(
        (status = 200, description = "The series, newest first.", body = SeriesList),
        (status = 400, description = "The query could not be read.", body = ErrorBody),
    )
)]
async fn series(
    State(state): State<AppState>,
    Query(q): Query<SeriesListQuery>,
) -> Result<Json<SeriesList>> {
    Ok(Json(SeriesList {
        series: lists::series_list(&state, &q).await?,
    }))
}

/// One version of a series.
#[utoipa::path(
    get,
    path = "/api/v1/series/{id}",
    params(("id" = i64, Path, description = "Series id.")),
    responses(
        (status = 200, description = "The series version.", body = SeriesView),
        (status = 404, description = "No such series.", body = ErrorBody),
    )
)]
async fn one_series(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<SeriesView>> {
    Ok(Json(lists::series_view(
        &state,
        lists::series_find(&state, id).await?,
    )))
}
