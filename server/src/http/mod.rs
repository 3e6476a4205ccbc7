//! The HTTP application: one module per resource, each exposing `router()`,
//! merged here. To add a JSON resource, write its module (routing each
//! handler with `routes!`, which also documents it from its
//! `#[utoipa::path]`) and add one `.merge(…)` line to [`api`]; HTML pages
//! go in [`pages`], which the OpenAPI document leaves out.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
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
pub mod machines;
pub mod openapi;
pub mod pages;
pub mod read_access;
pub mod reports;
pub mod tokens;
pub mod trees;

/// The JSON API: every route in it is described in its OpenAPI document
/// (`into_openapi()`), which `GET /api/v1/openapi.json` serves.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(health::router())
        .merge(jobs::router())
        .merge(comparisons::router())
        .merge(bisections::router())
        .merge(trees::router())
        .merge(changes::router())
        .merge(reports::router())
        .merge(machines::router())
        .merge(tokens::router())
        .merge(openapi::router())
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
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(body_limit))
        // Reports, pages and their tables are text that shrinks ~10×; a
        // client that does not ask gets it as is.
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Most characters a listing's search term may have.
pub const MAX_SEARCH_CHARS: usize = 200;

/// A listing's search term (`q`), checked: blank is no search; more than
/// [`MAX_SEARCH_CHARS`] characters or a control character is refused.
pub(crate) fn search_term(q: Option<&str>) -> Result<Option<&str>, Error> {
    let Some(q) = q.map(str::trim).filter(|q| !q.is_empty()) else {
        return Ok(None);
    };
    if q.chars().count() > MAX_SEARCH_CHARS {
        return Err(Error::Malformed(format!(
            "search term of {} characters: at most {MAX_SEARCH_CHARS}",
            q.chars().count()
        )));
    }
    if q.chars().any(char::is_control) {
        return Err(Error::Malformed(
            "search term with a control character".into(),
        ));
    }
    Ok(Some(q))
}

/// Reads a listing filter (by status or verdict) into its enum, rejecting
/// a value that is none of `allowed` (spelled by `name`) and naming them.
pub(crate) fn one_of<T: Copy>(
    what: &str,
    value: Option<&str>,
    allowed: &[T],
    name: fn(T) -> &'static str,
) -> Result<Option<T>, Error> {
    let Some(v) = value else {
        return Ok(None);
    };
    match allowed.iter().copied().find(|a| name(*a) == v) {
        Some(found) => Ok(Some(found)),
        None => Err(Error::Malformed(format!(
            "{what} `{v}` is not one of {}",
            allowed
                .iter()
                .map(|a| name(*a))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

async fn not_found(uri: axum::http::Uri) -> Error {
    Error::NotFound(format!(
        "no such endpoint: {}; see /api/v1/openapi.json",
        uri.path()
    ))
}
