//! The CI API: submit a comparison, follow it, list them, cancel one.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use patchperf_common::api::{
    BootView, CancelResponse, ComparisonCreateRequest, ComparisonCreated, ComparisonListQuery,
    ComparisonSubmission, FailureView, JobView, PatchMessage, PatchesView, RunCounts,
};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::ErrorBody;
use patchperf_common::run::Side;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::comparisons::{ComparisonRow, ComparisonSummary, ListFilter, ListOrder};
use crate::db::{boots::BootRow, jobs::JobRow};
use crate::domain::comparison::overview;
use crate::domain::report::ComparisonReport;
use crate::domain::report::verdict::VerdictView;
use crate::domain::{comparison, comparison::submit, jobs::interleave};
use crate::error::Result;
use crate::http::auth::CiAuth;
use crate::http::extract::{Json, Path, Query};
use crate::http::listing::{self, ComparisonQuery};
use crate::{AppState, Error};

/// Routes of this module, each documented by its handler's `utoipa::path`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(cancel))
}

/// `GET /api/v1/comparisons/{id}` answer: the shared view with the whole
/// verdict.
pub type ComparisonView = patchperf_common::api::ComparisonView<VerdictView>;

/// Submit a comparison of base and base+patch series.
///
/// Requires a ci token (or an admin token). Answers `201` with the
/// comparison's links; its jobs are queued in interleaved boot order. With
/// `per_patch`, a series of N ≥ 2 patches also gets N step comparisons
/// (patches 1..k-1 against 1..k), run in order before the whole series on
/// one machine and listed in the answer's `steps`. With `range` (`A..B`
/// over a git base at A), the server reads the range's first-parent
/// commits from the repository and measures them so, one step per commit;
/// the first such request on a repository waits for its clone.
#[utoipa::path(
    post,
    path = "/api/v1/comparisons",
    request_body = ComparisonCreateRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created; jobs queued in interleaved order.", body = ComparisonCreated),
        (status = 400, description = "The body could not be read.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 413, description = "Body larger than the server's limit.", body = ErrorBody),
        (status = 422, description = "Invalid content, the message naming the field; or no workload named and none exercises the files the series touches (`not measured: no workload exercises fs/xyz.c; …`).", body = ErrorBody),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: CiAuth,
    Json(req): Json<ComparisonCreateRequest>,
) -> Result<impl IntoResponse> {
    let req = ComparisonSubmission::try_from(req)
        .map_err(|invalid| Error::Invalid(invalid.to_string()))?;
    let (id, workloads) = submit::comparison(&state, &req, auth.caller.token_id).await?;
    let url = state.config.link(&format!("/api/v1/comparisons/{id}"));
    tracing::info!(comparison = id, by = %auth.caller.name, "comparison submitted");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, url.clone())],
        Json(ComparisonCreated {
            id,
            url,
            report_url: state.config.link(&format!("/comparisons/{id}")),
            workloads,
        }),
    ))
}

/// A comparison's status, per-job progress, run counts and verdict.
///
/// The verdict is computed from the runs stored so far.
#[utoipa::path(
    get,
    path = "/api/v1/comparisons/{id}",
    params(("id" = i64, Path, description = "Comparison id.")),
    responses(
        (status = 200, description = "The comparison.", body = ComparisonView),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 404, description = "No such comparison.", body = ErrorBody),
        (status = 503, description = "Computing the report took longer than the server allows.", body = ErrorBody),
    )
)]
async fn show(State(state): State<AppState>, Path(id): Path<i64>) -> Result<impl IntoResponse> {
    let (c, report) = overview::find(&state, id).await?;
    // Once settled, the answer changes only with the report (a new noise
    // floor), so it is written once per report.
    let settled = c.status.is_settled();
    let kept = settled
        .then(|| state.reports.rendered(id, &report, "json"))
        .flatten();
    let body = match kept {
        Some(body) => body,
        None => {
            let view = view(&state, c, &report).await?;
            let body = serde_json::to_string(&view)
                .map_err(|e| Error::Internal(format!("comparison {id} as JSON: {e}")))?;
            if settled {
                state.reports.keep_rendered(id, &report, "json", body)
            } else {
                body.into()
            }
        }
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    ))
}

/// What `show` answers for comparison `c` with its report.
async fn view(
    state: &AppState,
    c: ComparisonRow,
    report: &ComparisonReport,
) -> Result<ComparisonView> {
    let id = c.id;
    let o = overview::gather(state, &c).await?;
    let verdict = crate::domain::report::verdict::verdict_view(
        report,
        state
            .config
            .link(&format!("/api/v1/comparisons/{id}/report.txt")),
    )
    .linking(&state.config.link(&format!("/comparisons/{id}")));

    let jobs_view: Vec<JobView> = o
        .jobs
        .into_iter()
        .map(|j| {
            let expected = overview::expected_runs(&c, &j, &o.boots);
            job_view(j, &o.boots, &o.run_counts, expected)
        })
        .collect();
    // From the report: a whole series taken from its steps has their runs.
    let stored = |side: Side| {
        let n = report
            .groups
            .iter()
            .flat_map(|g| &g.runs)
            .filter(|r| r.side == side)
            .count();
        i64::try_from(n).unwrap_or(i64::MAX)
    };
    let runs = RunCounts {
        base: stored(Side::Base),
        patched: stored(Side::Patched),
        expected_per_side: i64::try_from(o.expected_per_side).unwrap_or(i64::MAX),
    };
    let boot_order = interleave::notation(o.boots.iter().map(|b| b.side));
    let machine = match (&c.machine_name, c.machine_inventory) {
        (Some(_), Some(inv)) => Some(inv),
        (Some(name), None) => Some(serde_json::json!({ "name": name })),
        _ => None,
    };
    Ok(ComparisonView {
        id: c.id,
        kind: c.kind,
        status: c.status,
        report_url: state.config.link(&format!("/comparisons/{id}")),
        submitted_by: c.submitted_by,
        created_at: c.created_at,
        updated_at: c.updated_at,
        finished_at: c.finished_at,
        // One answer for every reader (it is kept per report): the git
        // URL without credentials; runners get it whole in their jobs.
        base: c.base.0.without_credentials(),
        git_range: c.git_range,
        commit: c.commit_sha,
        patches: PatchesView {
            sha256: o.series_sha256,
            messages: o
                .messages
                .into_iter()
                .map(|m| PatchMessage {
                    position: m.position,
                    subject: m.subject,
                    message_id: m.message_id,
                    author: m.author,
                    has_diff: m.has_diff,
                })
                .collect(),
        },
        workloads: c.asked.workloads.clone(),
        params: c.params.0,
        run_length_pending: o.run_length_pending,
        runs_per_side: c.runs_per_side,
        max_runs_per_side: c.asked.max_runs.and_then(|n| i32::try_from(n).ok()),
        runs_added_at: c.runs_added_at,
        backend: c.asked.backend.map(|b| b.as_str().to_string()),
        config_fragment: c.asked.config_fragment.clone(),
        machine,
        pool: c.asked.0.pool,
        waiting: o.waiting,
        progress: o.progress,
        failure: o.failure.map(|f| f.words.line),
        boot_order,
        order_seed: c.order_seed as u64,
        jobs: jobs_view,
        runs,
        verdict,
        steps: o.steps,
        step_of: o.step_of,
    })
}

fn job_view(j: JobRow, boots: &[BootRow], counts: &[(i64, i64, i64)], expected: usize) -> JobView {
    let (base, patched) = counts
        .iter()
        .find(|(job, _, _)| *job == j.id)
        .map_or((0, 0), |&(_, b, p)| (b, p));
    let failure = j.failure_reason.map(|reason| FailureView {
        reason,
        reason_text: reason.as_str().into(),
        detail: j.failure_detail.unwrap_or_default(),
    });
    let boots: Vec<BootView> = boots
        .iter()
        .filter(|b| b.job_id == j.id)
        .map(|b| BootView {
            seq: b.seq,
            side: b.side,
        })
        .collect();
    let expected = i64::try_from(expected).unwrap_or(i64::MAX);
    JobView {
        id: j.id,
        seq: j.seq,
        state: j.state,
        attempt: j.attempt,
        max_attempts: j.max_attempts,
        message: j.message,
        boots,
        failure,
        log_tail: j.log_tail,
        runs: RunCounts {
            base,
            patched,
            expected_per_side: expected,
        },
        lease_expires_at: j.lease_expires_at,
        updated_at: j.updated_at,
    }
}

/// `GET /api/v1/comparisons` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ComparisonList {
    /// Newest first. Each comparison: id, status, kind, name (as kernel
    /// people name it: the patch's subject, the series' cover letter,
    /// `A..B (5 commits)`, `vfs.all 87d7add1d7 ("subject")`, `A/A
    /// calibration of open1 on lab-1 (tcg-icount)`), base, subject (the first
    /// patch's), workloads, runs_per_side, machine, created_at, once it is
    /// final its overall verdict and headline (null while it runs: its own
    /// GET has the live verdict) with headline_columns (its most important
    /// report: workload, nr_task, mode, metric, change, interval, verdict,
    /// below_delta, and how many reports it has), and a failed one's
    /// failure in words (`patch 2/3 does not apply`).
    #[schema(value_type = Vec<Object>)]
    pub comparisons: Vec<ComparisonSummary>,
    /// Pass as `before` for the next page, newest first; absent on the
    /// last page.
    pub next_before: Option<i64>,
    /// Pass as `after` for the next page, oldest first; absent on the last
    /// page.
    pub next_after: Option<i64>,
}

/// List comparisons, newest (or oldest) first.
#[utoipa::path(
    get,
    path = "/api/v1/comparisons",
    params(ComparisonListQuery),
    responses(
        (status = 200, description = "A page of comparisons.", body = ComparisonList),
        (status = 400, description = "A filter or the page size is not allowed.", body = ErrorBody),
    )
)]
async fn list(
    State(state): State<AppState>,
    Query(q): Query<ComparisonListQuery>,
) -> Result<Json<ComparisonList>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Error::Malformed(format!("limit {limit} must be 1 to 500")));
    }
    // The verdict order pages by number on the dashboard; a cursor cannot
    // follow it.
    let filter = listing::comparison_filter(
        &ComparisonQuery {
            status: q.status.as_deref(),
            machine: q.machine.as_deref(),
            workload: q.workload.as_deref(),
            verdict: q.verdict.as_deref(),
            q: q.q.as_deref(),
            sort: q.sort.as_deref(),
        },
        &[ListOrder::Newest, ListOrder::Oldest],
    )?;
    let order = filter.order;
    let (before, after) = match order {
        ListOrder::Oldest if q.before.is_some() => {
            return Err(Error::Malformed(
                "before is the cursor of newest first; oldest first pages with after".into(),
            ));
        }
        ListOrder::Newest if q.after.is_some() => {
            return Err(Error::Malformed(
                "after is the cursor of oldest first (sort=oldest); newest first pages with before"
                    .into(),
            ));
        }
        _ => (q.before, q.after),
    };
    let filter = ListFilter {
        before,
        after,
        limit,
        ..filter
    };
    let comparisons = comparison::listing::list(&state, &filter).await?;
    let cursor = if comparisons.len() == usize::try_from(limit).unwrap_or(usize::MAX) {
        comparisons.last().map(|c| c.id)
    } else {
        None
    };
    let (next_before, next_after) = match order {
        ListOrder::Oldest => (None, cursor),
        _ => (cursor, None),
    };
    Ok(Json(ComparisonList {
        comparisons,
        next_before,
        next_after,
    }))
}

/// Cancel a comparison.
///
/// Queued jobs fail as cancelled, running ones learn it from heartbeats.
/// Requires a ci token (or an admin token).
#[utoipa::path(
    post,
    path = "/api/v1/comparisons/{id}/cancel",
    params(("id" = i64, Path, description = "Comparison id.")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Cancelled.", body = CancelResponse),
        (status = 400, description = "The id is not a number.", body = ErrorBody),
        (status = 401, description = "No usable token.", body = ErrorBody),
        (status = 403, description = "Not a ci or admin token.", body = ErrorBody),
        (status = 404, description = "No such comparison.", body = ErrorBody),
        (status = 409, description = "The comparison is already final.", body = ErrorBody),
    )
)]
async fn cancel(
    State(state): State<AppState>,
    auth: CiAuth,
    Path(id): Path<i64>,
) -> Result<Json<CancelResponse>> {
    comparison::cancel(&state, id, &auth.caller.name).await?;
    tracing::info!(comparison = id, by = %auth.caller.name, "comparison cancelled");
    Ok(Json(CancelResponse {
        id,
        status: ComparisonStatus::Cancelled,
    }))
}
