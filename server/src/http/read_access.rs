//! Who may read. By default the pages and every `GET` of the API are public:
//! a lab shows its comparisons to whoever can reach it. `serve --private`
//! ([`crate::Config::private_reads`]) makes reading need a token too, of any
//! kind (runner, ci or admin), checked as the write endpoints check theirs.
//! `/healthz` stays open for load balancers, and the pages' stylesheet,
//! script and icon stay open so that the 401 page itself is readable.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::http::auth::Caller;

/// Paths every reader may get, token or not.
const OPEN: &[&str] = &["/healthz", "/favicon.ico"];
/// Path prefix of the pages' static files.
const STATIC: &str = "/static/";

/// Middleware for the read routes: with private reads on, a `GET` or `HEAD`
/// without a valid token answers 401 before the handler runs. Other methods
/// pass through: each write endpoint requires its own kind of token.
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let open = !state.config.private_reads
        || !matches!(*req.method(), Method::GET | Method::HEAD)
        || OPEN.contains(&path)
        || path.starts_with(STATIC);
    if open {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    match Caller::from_request_parts(&mut parts, &state).await {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => e.into_response(),
    }
}
