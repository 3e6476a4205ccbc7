//! `/jobs/{id}/log`: what a job went through, step by step, with the log
//! lines the runner reported at each step. A long build reports the same
//! step hundreds of times, each with a tail overlapping the last, so a run
//! of events with the same state, attempt and message is shown once, with
//! its count, time span and its last tail; `/jobs/{id}/log.txt` has every
//! event as stored.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::view;
use crate::AppState;
use crate::domain::jobs::log::EventRow;
use crate::domain::jobs::log::{self, JobLog};
use crate::error::Result;
use crate::http::extract::Path;

/// A run of consecutive events with the same state, attempt and message.
#[derive(Debug)]
pub struct EventLine {
    at: String,
    /// When the last of them happened, for a run of more than one.
    until: Option<String>,
    /// How many events the line stands for.
    count: usize,
    state: &'static str,
    attempt: i32,
    message: String,
    /// The last tail of the run (earlier ones are its beginnings).
    log_tail: String,
}

#[derive(Debug, Template, WebTemplate)]
#[template(path = "job_log.html")]
pub(super) struct JobLogPage {
    id: i64,
    /// The job's place in its comparison's boot order (1-based).
    block: i32,
    blocks: usize,
    comparison_id: i64,
    state: &'static str,
    failure: Option<String>,
    /// Day and time of the first event; lines show the time of day.
    since: Option<String>,
    /// Events stored, before collapsing.
    stored: usize,
    events: Vec<EventLine>,
    log_tail: String,
}

/// Collapses runs of events with the same state, attempt and message.
fn collapse(stored: Vec<EventRow>) -> Vec<EventLine> {
    let mut lines: Vec<EventLine> = Vec::new();
    for e in stored {
        let state = e.state.as_str();
        if let Some(last) = lines
            .last_mut()
            .filter(|l| l.state == state && l.attempt == e.attempt && l.message == e.message)
        {
            last.count += 1;
            last.until = Some(view::clock(e.at));
            if !e.log_tail.is_empty() {
                last.log_tail = e.log_tail;
            }
            continue;
        }
        lines.push(EventLine {
            at: view::clock(e.at),
            until: None,
            count: 1,
            state,
            attempt: e.attempt,
            message: e.message,
            log_tail: e.log_tail,
        });
    }
    lines
}

pub(super) async fn page(State(state): State<AppState>, Path(id): Path<i64>) -> Result<JobLogPage> {
    let JobLog {
        job,
        events: stored,
        blocks,
    } = log::of_job(&state, id).await?;
    let since = stored.first().map(|e| view::time(e.at));
    let count = stored.len();
    let events = collapse(stored);
    let failure = job
        .failure_reason
        .map(|r| view::failure_text(r, job.failure_detail.as_deref()));
    Ok(JobLogPage {
        id,
        block: job.seq + 1,
        blocks,
        stored: count,
        comparison_id: job.comparison_id,
        state: job.state.as_str(),
        failure,
        since,
        events,
        log_tail: job.log_tail,
    })
}

/// `/jobs/{id}/log.txt`: every event of the job as stored, in order, as
/// plain text.
pub(super) async fn raw(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<impl IntoResponse> {
    let JobLog { job, events, .. } = log::of_job(&state, id).await?;
    let mut text = format!("job {id} of comparison {}\n", job.comparison_id);
    for e in events {
        text.push_str(&format!(
            "{} {} attempt {} {}\n",
            view::time(e.at),
            e.state.as_str(),
            e.attempt,
            e.message
        ));
        for line in e.log_tail.lines() {
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text))
}
