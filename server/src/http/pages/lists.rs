//! `/lists`, `/lists/{id}` and `/series/{id}`: the mailing lists followed;
//! one list's page with each series version posted and where it stands
//! (waiting for patches, incomplete and what is missing, skipped and why,
//! queued, measured, reported), newest first; and one series version's
//! page linking its other versions, its comparison and the reply sent.

use axum::extract::State;
use patchperf_common::api::{SeriesListQuery, SeriesView};
use patchperf_common::credentials::without_credentials;

use super::view;
use crate::AppState;
use crate::domain::lists;
use crate::error::Result;
use crate::http::extract::Path;

/// Series shown on a list's page.
const SERIES_SHOWN: u32 = 200;

/// A list in the list of lists.
#[derive(Debug)]
pub struct ListItem {
    id: i64,
    name: String,
    address: String,
    archive: String,
    messages: i64,
    polled: String,
    error: String,
}

#[derive(Debug, askama::Template, askama_web::WebTemplate)]
#[template(path = "lists.html")]
pub(super) struct ListsPage {
    lists: Vec<ListItem>,
}

/// The lists followed, by name.
pub(super) async fn list(State(state): State<AppState>) -> Result<ListsPage> {
    let lists = lists::all(&state)
        .await?
        .into_iter()
        .map(|l| ListItem {
            id: l.id,
            archive: l
                .archive_url
                .as_deref()
                .map(without_credentials)
                .unwrap_or_default(),
            messages: l.messages,
            polled: l.polled_at.map(view::time).unwrap_or_default(),
            error: l.poll_error.unwrap_or_default(),
            name: l.name,
            address: l.address,
        })
        .collect();
    Ok(ListsPage { lists })
}

/// A series version as a row.
#[derive(Debug)]
pub struct SeriesItem {
    id: i64,
    subject: String,
    version: i32,
    total: i32,
    author: String,
    posted: String,
    state: &'static str,
    reason: String,
    comparison_id: Option<i64>,
    verdict: String,
}

impl From<SeriesView> for SeriesItem {
    fn from(s: SeriesView) -> Self {
        SeriesItem {
            id: s.id,
            subject: s.subject,
            version: s.version,
            total: s.total,
            author: s.author,
            posted: s.posted_at.map(view::time).unwrap_or_default(),
            state: s.state.as_str(),
            reason: s.reason.unwrap_or_default(),
            comparison_id: s.comparison_id,
            verdict: s.verdict.unwrap_or_default(),
        }
    }
}

#[derive(Debug, askama::Template, askama_web::WebTemplate)]
#[template(path = "list.html")]
pub(super) struct ListPage {
    list: patchperf_common::api::ListView,
    series: Vec<SeriesItem>,
}

/// One list and its series, newest first.
pub(super) async fn page(State(state): State<AppState>, Path(id): Path<i64>) -> Result<ListPage> {
    let list = lists::view(&state, lists::find(&state, id).await?);
    let q = SeriesListQuery {
        list: Some(id),
        state: None,
        limit: Some(SERIES_SHOWN),
    };
    let series = lists::series_list(&state, &q)
        .await?
        .into_iter()
        .map(SeriesItem::from)
        .collect();
    Ok(ListPage { list, series })
}

#[derive(Debug, askama::Template, askama_web::WebTemplate)]
#[template(path = "list_series.html")]
pub(super) struct SeriesPage {
    s: SeriesView,
    versions: Vec<SeriesItem>,
    /// A queued series being measured: what runs now, how long is left.
    measuring: Option<String>,
    /// A measured one's answer: verdict and sentence, why, the patch that
    /// moved it, the reply in the archive.
    answer: lists::SeriesAnswer,
}

/// One series version with the other versions of its series.
pub(super) async fn series(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<SeriesPage> {
    let row = lists::series_find(&state, id).await?;
    let measuring = lists::measuring(&state, &row).await?;
    let versions = lists::versions(&state, &row)
        .await?
        .into_iter()
        .map(|v| {
            let this = v.id == row.id;
            let mut item = SeriesItem::from(v);
            // The row of the version being measured says so, as the
            // facts above it do.
            if this && measuring.is_some() {
                item.state = "measuring";
            }
            item
        })
        .collect();
    let answer = lists::answer_of(&state, &row).await?;
    let s = lists::series_view(&state, row);
    Ok(SeriesPage {
        s,
        versions,
        measuring,
        answer,
    })
}
