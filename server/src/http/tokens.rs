//! Token management over HTTP for admins: list, create, revoke. The same
//! as `patchperf-server token …` on the server host.

use axum::extract::State;
use axum::http::StatusCode;
use patchperf_common::protocol::ErrorBody;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::db::tokens::TokenListing;
use crate::domain::tokens::{self, TokenCreated, TokenKind};
use crate::error::Result;
use crate::http::auth::AdminAuth;
use crate::http::extract::{Json, Path};

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
}

/// `GET /api/v1/tokens` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// Oldest first; never the token text (only its hash is kept).
    #[schema(value_type = Vec<Object>)]
    pub tokens: Vec<TokenListing>,
}

/// List tokens (never their text).
///
/// Requires an admin token.
#[utoipa::path(
    get,
    path = "/api/v1/tokens",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Tokens.", body = TokenList),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
    )
)]
async fn list(State(state): State<AppState>, _admin: AdminAuth) -> Result<Json<TokenList>> {
    Ok(Json(TokenList {
        tokens: tokens::list(&state).await?,
    }))
}

/// `POST /api/v1/tokens` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenCreateRequest {
    /// runner, ci or admin.
    pub kind: TokenKind,
    /// Who or what will use it.
    pub name: String,
}

/// Create a token; its text is shown only in this answer.
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/tokens",
    request_body = TokenCreateRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created.", body = TokenCreated),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 422, description = "The name is empty or too long.", body = ErrorBody),
    )
)]
async fn create(
    State(state): State<AppState>,
    admin: AdminAuth,
    Json(req): Json<TokenCreateRequest>,
) -> Result<(StatusCode, Json<TokenCreated>)> {
    let mut conn = state.db.acquire().await?;
    let created = tokens::create(&mut conn, req.kind, &req.name).await?;
    tracing::info!(id = created.id, kind = %created.kind, by = %admin.caller.name, "token created");
    Ok((StatusCode::CREATED, Json(created)))
}

/// Revoke a token.
///
/// Requires an admin token.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/{id}/revoke",
    params(("id" = i64, Path, description = "Token id.")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Revoked."),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not an admin token.", body = ErrorBody),
        (status = 404, description = "No such token.", body = ErrorBody),
    )
)]
async fn revoke(
    State(state): State<AppState>,
    admin: AdminAuth,
    Path(id): Path<i64>,
) -> Result<StatusCode> {
    tokens::revoke(&state, id).await?;
    tracing::info!(id, by = %admin.caller.name, "token revoked");
    Ok(StatusCode::NO_CONTENT)
}
