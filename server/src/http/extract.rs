//! Extractors that answer a request they cannot read with the server's JSON
//! error (naming the problem) instead of axum's plain-text rejection.
//!
//! They also keep NUL characters out: Postgres refuses U+0000 in `text` and
//! `\u0000` in `jsonb`, so a NUL that got past the door would fail the write
//! as a 500 (and a runner would retry it forever). Every string of a
//! request is checked here once, whatever type it is read into: JSON
//! strings and keys at any depth (422, naming the JSON path), query values
//! and path segments (400, naming the parameter).

use std::fmt::Write as _;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;

/// What a caller is told to do about a NUL character.
const NUL_ADVICE: &str = "patchperf stores text without NUL characters; remove it \
     (or replace it, say with U+FFFD) before sending";

/// A JSON body (request) or answer (response).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // The body is read once and kept, so that after axum has read it
        // (with its own content-type check and messages) it can be searched
        // for NUL characters.
        let (parts, body) = req.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(|e| json_rejection(JsonRejection::from(e)))?;
        let req = Request::from_parts(parts, Body::from(bytes.clone()));
        let value = match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => value,
            Err(rejection) => return Err(json_rejection(rejection)),
        };
        match nul_in_json(&bytes) {
            Some(at) => Err(Error::Invalid(format!(
                "{at} contains a NUL character (\\u0000); {NUL_ADVICE}"
            ))),
            None => Ok(Json(value)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> Error {
    let text = rejection.body_text();
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => Error::TooLarge(format!(
            "request body is too large: {text}; split the patch series or ask the operator to raise --body-limit"
        )),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            Error::Malformed(format!("{text}; send the body as JSON"))
        }
        _ => Error::Malformed(format!("malformed JSON body: {text}")),
    }
}

/// Where the first NUL character of a JSON document is, as its path
/// (`` `result.metrics[3].name` ``), or `None` when it has none.
fn nul_in_json(body: &[u8]) -> Option<String> {
    // Valid JSON carries a NUL only as the escape `\u0000` (a raw control
    // character is malformed), so a body without that text is not parsed
    // a second time.
    if !body.windows(6).any(|w| w == br"\u0000") {
        return None;
    }
    // `\\u0000` (a backslash, then `u0000`) also matches; the parse decides.
    let value: Value = serde_json::from_slice(body).ok()?;
    let mut path = String::new();
    if !nul_in_value(&value, &mut path) {
        return None;
    }
    Some(if path.is_empty() {
        "the JSON body".to_string()
    } else {
        format!("`{path}`")
    })
}

/// Whether `value` holds a NUL (in a string or a key); if so `path` ends
/// with where, from the document's root.
fn nul_in_value(value: &Value, path: &mut String) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
            let len = path.len();
            let _ = write!(path, "[{i}]");
            let found = nul_in_value(item, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        Value::Object(fields) => fields.iter().any(|(key, item)| {
            let len = path.len();
            push_key(path, key);
            let found = key.contains('\0') || nul_in_value(item, path);
            if !found {
                path.truncate(len);
            }
            found
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Appends `.key`, or `["key"]` (escaped, so a NUL shows as `\0`) for a key
/// that is not a plain name.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        let _ = write!(path, "[{key:?}]");
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Path parameters.
#[derive(Debug, Clone, Copy)]
pub struct Path<T>(pub T);

impl<S, T> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let value = match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => value,
            Err(rejection) => return Err(path_rejection(rejection)),
        };
        // The segments as decoded; they read as T above, so they are there.
        if let Ok(params) = RawPathParams::from_request_parts(parts, state).await {
            if let Some((name, _)) = params.iter().find(|(_, v)| v.contains('\0')) {
                return Err(Error::Malformed(format!(
                    "path parameter `{name}` contains a NUL character (%00); {NUL_ADVICE}"
                )));
            }
        }
        Ok(Path(value))
    }
}

fn path_rejection(rejection: PathRejection) -> Error {
    Error::Malformed(format!("bad path: {}", rejection.body_text()))
}

/// Query-string parameters.
#[derive(Debug, Clone, Copy)]
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let value = match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => value,
            Err(rejection) => return Err(query_rejection(rejection)),
        };
        if let Some(name) = nul_in_query(parts) {
            return Err(Error::Malformed(format!(
                "query parameter `{name}` contains a NUL character (%00); {NUL_ADVICE}"
            )));
        }
        Ok(Query(value))
    }
}

fn query_rejection(rejection: QueryRejection) -> Error {
    Error::Malformed(format!("bad query string: {}", rejection.body_text()))
}

/// The name of the first query parameter whose name or value holds a NUL
/// (escaped, so a NUL in the name shows as `\0`).
fn nul_in_query(parts: &Parts) -> Option<String> {
    // A URI cannot carry a raw NUL: only `%00` decodes to one.
    if !parts.uri.query().is_some_and(|q| q.contains("%00")) {
        return None;
    }
    let axum::extract::Query(pairs) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri).ok()?;
    pairs
        .into_iter()
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        .map(|(k, _)| k.escape_debug().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_is_found_at_any_depth_and_named_by_its_path() {
        let at = |body: &str| nul_in_json(body.as_bytes());
        assert_eq!(at(r#"{"a": "x"}"#), None);
        assert_eq!(at(r#"{"a": "\\u0000"}"#), None);
        assert_eq!(
            at(r#"{"result": {"metrics": [{"name": "a"}, {"name": "b\u0000"}]}}"#).as_deref(),
            Some("`result.metrics[1].name`")
        );
        assert_eq!(
            at(r#"{"params": {"a b\u0000": 1}}"#).as_deref(),
            Some(r#"`params["a b\0"]`"#)
        );
        assert_eq!(at(r#""\u0000""#).as_deref(), Some("the JSON body"));
        assert_eq!(at(r#"[1, ["\u0000"]]"#).as_deref(), Some("`[1][0]`"));
    }
}
