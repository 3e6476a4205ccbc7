//! `GET /api/v1/comparisons/{id}/report.txt`: the 0-day style text report,
//! as an email to the patch author would carry it. Its `report:` line is
//! absolute, as a mail needs: from `--public-url`, or without one from the
//! `Host` the request was sent to.

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use patchperf_common::protocol::ErrorBody;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::domain::comparison::overview;
use crate::domain::comparison::steps;
use crate::error::Result;
use crate::http::extract::Path;

/// Routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(text))
}

/// The 0-day style text report (one table per workload, mode and nr_task).
#[utoipa::path(
    get,
    path = "/api/v1/comparisons/{id}/report.txt",
    params(("id" = i64, Path, description = "Comparison id.")),
    responses(
        (status = 200, description = "The report.", body = String, content_type = "text/plain"),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 404, description = "No such comparison.", body = ErrorBody),
        (status = 503, description = "Computing the report took longer than the server allows.", body = ErrorBody),
    )
)]
async fn text(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
) -> Result<impl IntoResponse> {
    let c = overview::row(&state, id).await?;
    let url = match (&state.config.public_url, origin(&headers)) {
        (None, Some(origin)) => Some(format!("{origin}/comparisons/{id}")),
        _ => None,
    };
    let text = steps::report_txt(&state, &c, url.as_deref()).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text))
}

/// `http://<Host>` of the request, when its `Host` is a plain host name or
/// address with an optional port (anything else, and no link is made up).
fn origin(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let plain = !host.is_empty()
        && host.len() <= 255
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    plain.then(|| format!("http://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_host_makes_an_origin() {
        let with = |host: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, host.parse().unwrap());
            origin(&h)
        };
        assert_eq!(
            with("perf.lab:8080").as_deref(),
            Some("http://perf.lab:8080")
        );
        assert_eq!(with("[::1]:80").as_deref(), Some("http://[::1]:80"));
        assert_eq!(with("evil.org/phish?"), None);
        assert_eq!(with("a b"), None);
        assert_eq!(origin(&HeaderMap::new()), None);
    }
}
