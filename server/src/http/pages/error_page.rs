//! Errors on HTML pages answered as a page: a person who follows a stale
//! link to `/comparisons/99` reads "no comparison 99" in the site's layout,
//! not a JSON document. The message is the one the API would give.

use askama::Template;
use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use patchperf_common::protocol::ErrorBody;

/// Largest error body read back (error bodies are one short message).
const MAX_ERROR_BODY: usize = 64 * 1024;

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    status: String,
    message: String,
}

/// Middleware for the page routes: turns a JSON error answer into the same
/// status with an HTML page.
pub(super) async fn html_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(response.status().is_client_error() || response.status().is_server_error()) || !is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let message = match to_bytes(body, MAX_ERROR_BODY).await {
        Ok(bytes) => serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| b.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => String::new(),
    };
    let page = ErrorPage {
        status: parts.status.to_string(),
        message,
    };
    match page.render() {
        Ok(html) => (parts.status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "rendering the error page");
            Response::from_parts(parts, Body::from("error"))
        }
    }
}
