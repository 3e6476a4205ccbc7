//! `/static/{file}`: the stylesheet and the script, compiled into the
//! binary so a server needs no files beside it.

use axum::http::header;
use axum::response::IntoResponse;

use crate::Error;
use crate::error::Result;
use crate::http::extract::Path;

pub(super) async fn file(Path(file): Path<String>) -> Result<impl IntoResponse> {
    let (body, kind) = match file.as_str() {
        "style.css" => (
            include_str!("../../../../static/style.css"),
            "text/css; charset=utf-8",
        ),
        "live.js" => (
            include_str!("../../../../static/live.js"),
            "text/javascript; charset=utf-8",
        ),
        _ => return Err(Error::NotFound(format!("no static file {file}"))),
    };
    Ok((
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    ))
}
