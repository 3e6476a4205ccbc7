//! Prometheus' side of the server: `GET /metrics` for a `metrics` (or
//! admin) token on the main address, the same without a token on the address of
//! `serve --metrics-listen` (which the lab keeps to its monitoring
//! network), and the middleware that counts every request by its route.
//! What is exposed, and why gauges come from the database: see
//! `domain::context::telemetry`.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::domain::context::telemetry::{self, classic, scrape};
use crate::http::auth::MetricsAuth;
use crate::{AppState, Error};

/// Where Prometheus scrapes.
pub const PATH: &str = "/metrics";

/// `GET /metrics` on the main address: a `metrics` token's (or an
/// admin's).
pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(for_scraper))
}

/// The whole application of `serve --metrics-listen`: `GET /metrics`, open
/// to whoever reaches that address.
pub fn exporter(state: AppState) -> Router {
    Router::new().route(PATH, get(exposition)).with_state(state)
}

async fn for_scraper(
    _scraper: MetricsAuth,
    state: State<AppState>,
    headers: HeaderMap,
) -> Result<Response, Error> {
    exposition(state, headers).await
}

/// OpenMetrics (what Prometheus asks for first, and what a request that
/// names no format gets), or the classic text format for a request that
/// asks for `text/plain` and not OpenMetrics (`promtool check metrics`,
/// older scrapers).
async fn exposition(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Error> {
    let text = scrape::exposition(&state).await?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .unwrap_or("");
    let (kind, text) = if accept.contains("text/plain") && !accept.contains("openmetrics") {
        (classic::CONTENT_TYPE, classic::classic(&text))
    } else {
        (telemetry::CONTENT_TYPE, text)
    };
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static(kind))],
        text,
    )
        .into_response())
}

/// The method as a label: anything but the standard ones is `other`, so
/// that a client inventing methods cannot invent series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Middleware: counts each request under the route it matched (the
/// declared pattern, `unmatched` when none did) with its status and how
/// long the handler took to answer.
pub async fn record(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let response = next.run(req).await;
    state.telemetry.request(
        method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_methods_share_one_label() {
        let odd = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&odd), "other");
        assert_eq!(method_label(&Method::POST), "POST");
    }
}
