//! How each [`Error`] answers over HTTP: its status, and a body the caller
//! can act on. A caller's mistake is told as it is; our own faults are
//! logged with all detail and answered generically, never with SQL or
//! paths.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use patchperf_common::protocol::ErrorBody;

use crate::Error;

/// The HTTP status `e` answers with.
pub fn status(e: &Error) -> StatusCode {
    match e {
        Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        Error::Forbidden(_) => StatusCode::FORBIDDEN,
        Error::Malformed(_) => StatusCode::BAD_REQUEST,
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::WrongState(_) => StatusCode::CONFLICT,
        Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Error::Invalid(_) | Error::NotMeasured(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        Error::Busy { .. } => StatusCode::TOO_MANY_REQUESTS,
        Error::Database(_) | Error::Internal(_) | Error::Setup(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = status(&self);
        let mut retry_after = None;
        let message = match &self {
            // What took too long or is busy is worth telling the caller.
            Error::Unavailable {
                message,
                retry_after: after,
            } => {
                tracing::warn!(error = %message, "request given up");
                retry_after = *after;
                message.clone()
            }
            Error::Busy {
                message,
                retry_after: after,
            } => {
                tracing::info!(error = %message, "request refused: busy");
                retry_after = Some(*after);
                message.clone()
            }
            _ if status.is_server_error() => {
                tracing::error!(error = %self, "request failed");
                "internal server error; the server log has the details".to_string()
            }
            // Refusals with their reason (a 401's, a 422's): what an admin
            // reads when a runner or CI says it was turned away.
            _ => {
                tracing::info!(status = status.as_u16(), error = %self, "request refused");
                self.to_string()
            }
        };
        let mut response = (status, Json(ErrorBody { error: message })).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
