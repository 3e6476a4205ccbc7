//! `/static/{file}`: the stylesheet, the script and the icon, compiled
//! into the binary so a server needs no files beside it; the icon also at
//! `/favicon.ico`, where browsers look for one unasked.

use axum::http::header;
use axum::response::IntoResponse;

use crate::Error;
use crate::error::Result;
use crate::http::extract::Path;

const ICON: &str = include_str!("../../../../static/favicon.svg");
const ICON_TYPE: &str = "image/svg+xml";

/// `/favicon.ico`: the icon (an SVG; browsers read the type, not the name).
pub(super) async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, ICON_TYPE),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        ICON,
    )
}

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
        "favicon.svg" => (ICON, ICON_TYPE),
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
