//! `/comparisons/{id}/series.mbox`: the patch series a comparison measured,
//! byte for byte as submitted (or as read from its git range), to open in
//! a mail client or give to `git am`/`b4`.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::domain::comparison::overview;
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error};

pub(super) async fn mbox(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<impl IntoResponse> {
    let c = overview::row(&state, id).await?;
    let text = overview::mbox(&state, &c).await?;
    if text.trim().is_empty() {
        return Err(Error::NotFound(format!(
            "comparison {id} boots the base kernel on both sides: it has no series"
        )));
    }
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "application/mbox; charset=utf-8".to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"comparison-{id}.mbox\""),
            ),
        ],
        text,
    ))
}
