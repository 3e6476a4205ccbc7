//! `/jobs/{id}/log`: what a job went through, step by step, with the log
//! lines the runner reported at each step.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use super::view;
use crate::error::Result;
use crate::http::extract::Path;
use crate::{AppState, Error, db};

/// One event of the job.
#[derive(Debug)]
pub struct EventLine {
    at: String,
    state: &'static str,
    attempt: i32,
    message: String,
    log_tail: String,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "job_log.html")]
pub(super) struct JobLogPage {
    id: i64,
    comparison_id: i64,
    state: &'static str,
    failure: Option<String>,
    /// Day and time of the first event; lines show the time of day.
    since: Option<String>,
    events: Vec<EventLine>,
    log_tail: String,
}

pub(super) async fn page(State(state): State<AppState>, Path(id): Path<i64>) -> Result<JobLogPage> {
    let job = db::jobs::by_id(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
    let stored = db::events::for_job(&state.db, id).await?;
    let since = stored.first().map(|e| view::time(e.at));
    let events = stored
        .into_iter()
        .map(|e| EventLine {
            at: view::clock(e.at),
            state: e.state.as_str(),
            attempt: e.attempt,
            message: e.message,
            log_tail: e.log_tail,
        })
        .collect();
    let failure = job
        .failure_reason
        .map(|r| view::failure_text(r, job.failure_detail.as_deref()));
    Ok(JobLogPage {
        id,
        comparison_id: job.comparison_id,
        state: job.state.as_str(),
        failure,
        since,
        events,
        log_tail: job.log_tail,
    })
}
