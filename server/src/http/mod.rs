//! The HTTP application: one module per resource, each exposing `router()`,
//! merged here. To add a JSON resource, write its module (routing each
//! handler with `routes!`, which also documents it from its
//! `#[utoipa::path]`) and add one `.merge(…)` line to [`api`]; HTML pages
//! go in [`pages`], which the OpenAPI document leaves out.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tower_http::compression::CompressionLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{AppState, Error};

pub mod auth;
pub mod bisections;
pub mod changes;
pub mod comparisons;
pub mod error;
pub mod extract;
pub mod health;
pub mod jobs;
pub mod lease;
pub mod listing;
pub mod lists;
pub mod machines;
pub mod openapi;
pub mod pages;
pub mod prometheus;
pub mod read_access;
pub mod reports;
pub mod request_id;
pub mod tokens;
pub mod trees;

/// The JSON API: every route in it is described in its OpenAPI document
/// (`into_openapi()`), which `GET /api/v1/openapi.json` serves.
pub fn api() -> OpenApiRouter<AppState> {
    let mut api = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(health::router())
        .merge(jobs::router())
        .merge(comparisons::router())
        .merge(bisections::router())
        .merge(trees::router())
        .merge(lists::router())
        .merge(changes::router())
        .merge(reports::router())
        .merge(machines::router())
        .merge(tokens::router())
        .merge(openapi::router());
    openapi::inline_flattened(api.get_openapi_mut());
    api
}

/// The whole application over `state`.
pub fn app(state: AppState) -> Router {
    let body_limit = state.config.body_limit;
    let (api, _document) = api().split_for_parts();
    let api = api.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        read_access::require_token,
    ));
    Router::new()
        .merge(api)
        .merge(pages::router(&state))
        .merge(prometheus::router())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            prometheus::record,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        // Reports, pages and their tables are text that shrinks ~10×; a
        // client that does not ask gets it as is.
        .layer(CompressionLayer::new())
        // The access log: one line at info for every answer (status and
        // latency, in the request's span with its id, method and path).
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(axum::middleware::from_fn(request_id::assign))
        .with_state(state)
}

/// The span every log line written while answering a request is in: its
/// id (see [`request_id`]), method and path.
fn request_span(req: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let id = req
        .headers()
        .get(&request_id::HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!("request", id, method = %req.method(), path = req.uri().path())
}

async fn not_found(uri: axum::http::Uri) -> Error {
    Error::NotFound(format!(
        "no such endpoint: {}; see /api/v1/openapi.json",
        uri.path()
    ))
}
