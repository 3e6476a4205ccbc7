//! The server's one error type and how each variant answers over HTTP.
//!
//! Which variant to use:
//! - [`Error::Unauthorized`] (401): no usable `Authorization: Bearer` token:
//!   missing, malformed, unknown or revoked. Say which and how to get one.
//! - [`Error::Forbidden`] (403): a valid token that may not do this (wrong
//!   kind, or a machine registered under another token).
//! - [`Error::BadRequest`] (400): the request cannot be read: malformed
//!   JSON, a body of the wrong shape, a bad path or query parameter. Usually
//!   produced by the extractors in [`crate::http::extract`].
//! - [`Error::NotFound`] (404): the thing named in the path or body does not
//!   exist.
//! - [`Error::Conflict`] (409): the request is fine but the thing is in the
//!   wrong state for it: the caller does not hold the job's lease, the job
//!   is already finished, the comparison is already final.
//! - [`Error::PayloadTooLarge`] (413): the body is over the configured limit.
//! - [`Error::Unprocessable`] (422): the request was read but its content is
//!   invalid: unknown workload, fewer than 3 runs, an mbox without a patch,
//!   a non-finite metric. Name the field and the allowed values.
//! - [`Error::Unavailable`] (503): the request is fine but answering it
//!   would take longer than the server allows (a report that takes too
//!   long to compute). Say what took too long.
//! - [`Error::Setup`]: starting up or a command-line command failed (no
//!   Postgres binaries, unusable data directory); never from a handler.
//! - [`Error::Database`] / [`Error::Internal`] (500): our fault. Logged with
//!   all detail; the caller gets a generic message, never SQL or paths.
//!
//! Every 4xx message is written for the caller to act on: it says what was
//! wrong and, where it can, what would be right.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use patchperf_common::protocol::ErrorBody;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 401: no valid token.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: a valid token that may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// 400: the request could not be read.
    #[error("{0}")]
    BadRequest(String),
    /// 404: no such thing.
    #[error("{0}")]
    NotFound(String),
    /// 409: wrong state for this request.
    #[error("{0}")]
    Conflict(String),
    /// 413: body over the limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 422: readable but invalid content.
    #[error("{0}")]
    Unprocessable(String),
    /// 503: answering would take longer than allowed.
    #[error("{0}")]
    Unavailable(String),
    /// 500: a database error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// 500: anything else that is our fault.
    #[error("internal error: {0}")]
    Internal(String),
    /// Startup or command-line failure, with what to do about it.
    #[error("{0}")]
    Setup(String),
}

/// Result type of handlers and db functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Database(_) | Error::Internal(_) | Error::Setup(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            // What took too long is worth telling the caller.
            Error::Unavailable(m) => {
                tracing::warn!(error = %m, "request given up");
                m.clone()
            }
            _ if status.is_server_error() => {
                tracing::error!(error = %self, "request failed");
                "internal server error; the server log has the details".to_string()
            }
            _ => self.to_string(),
        };
        (status, Json(ErrorBody { error: message })).into_response()
    }
}
