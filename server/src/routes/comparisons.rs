//! The CI API: submit a comparison, follow it, list them, cancel one.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
use patchperf_common::run::MeasurementMode;
use patchperf_common::workload;
use serde::{Deserialize, Serialize};

use crate::auth::CiAuth;
use crate::db::comparisons::{ComparisonSummary, ListFilter, NewComparison};
use crate::db::{self, boots::BootRow, jobs::JobRow, patches::PatchRow};
use crate::error::Result;
use crate::extract::{Json, Path, Query};
use crate::{AppState, Error, interleave, lifecycle, mbox};

/// Fewest runs a side: fewer cannot give a confidence interval worth
/// printing.
pub const MIN_RUNS: u32 = 3;
/// Most runs a side: beyond this a comparison occupies a machine for days.
pub const MAX_RUNS: u32 = 100;

/// Routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/comparisons", post(create).get(list))
        .route("/api/v1/comparisons/{id}", get(show))
        .route("/api/v1/comparisons/{id}/cancel", post(cancel))
}

/// `POST /api/v1/comparisons` body.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComparisonCreateRequest {
    /// Base tree: `{"kind":"git","url":…,"commit":…}` or
    /// `{"kind":"tarball","name":"linux-source-6.1"}`.
    pub base: BaseSource,
    /// The patch series as mbox text (absent for an A/A comparison).
    #[serde(default)]
    pub mbox: String,
    /// An A/A comparison: both sides boot the base kernel, no patch. Its
    /// spread becomes the machine's noise floor, the smallest change later
    /// reports on that machine call real.
    #[serde(default)]
    pub aa: bool,
    /// Workload names from the catalogue.
    pub workloads: Vec<String>,
    /// Workload parameters.
    pub params: WorkloadParams,
    /// Boots per side (each boot runs every workload once per nr_task).
    pub runs: u32,
    /// When every job is done and a headline verdict is still undecided,
    /// add boots (doubling the runs a side) up to this many a side. Absent:
    /// `runs` is final.
    #[serde(default)]
    pub max_runs: Option<u32>,
    /// Measurement mode to insist on; the runner's best when absent.
    #[serde(default)]
    pub backend: Option<MeasurementMode>,
    /// Extra Kconfig lines for both kernels.
    #[serde(default)]
    pub config_fragment: Option<String>,
    /// Name of the machine to run on; the first machine to claim otherwise.
    #[serde(default)]
    pub machine: Option<String>,
    /// Seed of the random boot order (random when absent); to reproduce an
    /// order exactly.
    #[serde(default)]
    pub order_seed: Option<u64>,
}

/// `201` answer of `POST /api/v1/comparisons`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonCreated {
    /// The comparison id.
    pub id: i64,
    /// Where to poll its progress (this API).
    pub url: String,
    /// Where people read the report.
    pub report_url: String,
}

async fn create(
    State(state): State<AppState>,
    auth: CiAuth,
    Json(req): Json<ComparisonCreateRequest>,
) -> Result<impl IntoResponse> {
    validate_request(&req)?;
    let series = if req.aa {
        if !req.mbox.trim().is_empty() {
            return Err(Error::Unprocessable(
                "an A/A comparison (aa: true) boots the base kernel on both sides; \
                 leave out mbox"
                    .into(),
            ));
        }
        mbox::Series::empty()
    } else {
        mbox::parse(&req.mbox).map_err(Error::Unprocessable)?
    };
    let machine =
        match &req.machine {
            None => None,
            Some(name) => {
                let machine = db::machines::find_by_name(&state.db, name).await?.ok_or_else(|| {
                Error::Unprocessable(format!(
                    "unknown machine `{name}`; GET /api/v1/machines lists the registered ones"
                ))
            })?;
                if let Some(backend) = req.backend {
                    if !machine.backends.iter().any(|b| b == backend.as_str()) {
                        return Err(Error::Unprocessable(format!(
                            "machine `{name}` cannot measure with {} (it offers {})",
                            backend.as_str(),
                            machine.backends.join(", ")
                        )));
                    }
                }
                Some(machine)
            }
        };
    let seed = req.order_seed.unwrap_or_else(rand::random);
    let plan = interleave::plan(req.runs, seed);

    let mut tx = state.db.begin().await?;
    let series_id = db::patches::insert_series(&mut tx, &req.mbox, &series).await?;
    let new = NewComparison {
        base: &req.base,
        series_id,
        kind: if req.aa {
            ComparisonKind::Aa
        } else {
            ComparisonKind::Ab
        },
        workloads: &req.workloads,
        params: &req.params,
        runs_per_side: i32::try_from(req.runs).unwrap_or(i32::MAX),
        max_runs_per_side: req.max_runs.map(|m| i32::try_from(m).unwrap_or(i32::MAX)),
        backend: req.backend.map(MeasurementMode::as_str),
        config_fragment: req.config_fragment.as_deref(),
        machine: machine.map(|m| (m.id, m.inventory_json())),
        // Stored as the same 64 bits; Postgres has no unsigned type.
        order_seed: seed as i64,
        submitted_by: auth.caller.token_id,
    };
    let id = db::comparisons::insert(&mut tx, &new).await?;
    lifecycle::create_jobs(&mut tx, id, &plan, 0, state.config.max_attempts).await?;
    tx.commit().await?;
    state.jobs_changed.notify_waiters();

    let url = state.config.link(&format!("/api/v1/comparisons/{id}"));
    tracing::info!(comparison = id, by = %auth.caller.name, "comparison submitted");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, url.clone())],
        Json(ComparisonCreated {
            id,
            url,
            report_url: state.config.link(&format!("/comparisons/{id}")),
        }),
    ))
}

fn validate_request(req: &ComparisonCreateRequest) -> Result<()> {
    let bad = |m: String| Err(Error::Unprocessable(m));
    match &req.base {
        BaseSource::Git { url, commit } => {
            if url.trim().is_empty() {
                return bad("base.url must not be empty".into());
            }
            if commit.trim().is_empty() || commit.chars().any(char::is_whitespace) {
                return bad(format!(
                    "base.commit {commit:?} must be a commit id, tag or branch"
                ));
            }
        }
        BaseSource::Tarball { name } => {
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !name.starts_with('.');
            if !plain {
                return bad(format!(
                    "base.name {name:?} must be a plain tarball name such as \"linux-source-6.1\""
                ));
            }
        }
    }
    if req.workloads.is_empty() {
        return bad(format!(
            "workloads must name at least one of: {}",
            known_workloads()
        ));
    }
    for (i, w) in req.workloads.iter().enumerate() {
        if workload::find(w).is_none() {
            return bad(format!(
                "unknown workload `{w}`; known workloads: {}",
                known_workloads()
            ));
        }
        if req.workloads[..i].contains(w) {
            return bad(format!("workload `{w}` is listed twice"));
        }
    }
    let p = &req.params;
    if p.nr_task.is_empty() || p.nr_task.len() > 16 {
        return bad("params.nr_task must list 1 to 16 task counts".into());
    }
    for n in &p.nr_task {
        match n {
            NrTask::Count(0) => {
                return bad("params.nr_task: a task count must be at least 1".into());
            }
            NrTask::Count(c) if *c > 4096 => {
                return bad(format!("params.nr_task: {c} tasks is more than 4096"));
            }
            NrTask::Percent(p) if *p == 0 || *p > 100 => {
                return bad(format!("params.nr_task: {p}% must be 1–100%"));
            }
            _ => {}
        }
    }
    if !(1..=600).contains(&p.seconds) {
        return bad(format!(
            "params.seconds is {}; it must be 1 to 600 measured seconds",
            p.seconds
        ));
    }
    if p.warmup_seconds > 300 {
        return bad(format!(
            "params.warmup_seconds is {}; at most 300",
            p.warmup_seconds
        ));
    }
    if req.runs < MIN_RUNS || req.runs > MAX_RUNS {
        return bad(format!(
            "runs is {}; a comparison needs {MIN_RUNS} to {MAX_RUNS} runs a side",
            req.runs
        ));
    }
    if let Some(max) = req.max_runs {
        if max < req.runs || max > MAX_RUNS {
            return bad(format!(
                "max_runs is {max}; it must be from runs ({}) to {MAX_RUNS}",
                req.runs
            ));
        }
    }
    if let Some(fragment) = &req.config_fragment {
        for line in fragment.lines().map(str::trim) {
            let ok = line.is_empty()
                || (line.starts_with("CONFIG_") && line.contains('='))
                || (line.starts_with("# CONFIG_") && line.ends_with(" is not set"))
                || (line.starts_with('#') && !line.starts_with("# CONFIG_"));
            if !ok {
                return bad(format!(
                    "config_fragment line {line:?} is not `CONFIG_FOO=value` or \
                     `# CONFIG_FOO is not set`"
                ));
            }
        }
    }
    Ok(())
}

fn known_workloads() -> String {
    workload::WORKLOADS
        .iter()
        .map(|w| w.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `GET /api/v1/comparisons/{id}` answer.
#[derive(Debug, Serialize)]
pub struct ComparisonView {
    /// Comparison id.
    pub id: i64,
    /// `ab` (base against patched) or `aa` (base against itself, for the
    /// machine's noise floor).
    pub kind: String,
    /// queued, running, done, failed or cancelled.
    pub status: String,
    /// Where people read the report.
    pub report_url: String,
    /// Name of the submitting token.
    pub submitted_by: String,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// When it became final.
    pub finished_at: Option<DateTime<Utc>>,
    /// Base tree.
    pub base: BaseSource,
    /// The patch series.
    pub patches: PatchesView,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Parameters.
    pub params: WorkloadParams,
    /// Boots per side (more once boots were added while undecided).
    pub runs_per_side: i32,
    /// Most boots a side when more are added while undecided.
    pub max_runs_per_side: Option<i32>,
    /// The boots a side at which more were added, in order.
    pub runs_added_at: Vec<i32>,
    /// Requested measurement mode.
    pub backend: Option<String>,
    /// Extra Kconfig lines.
    pub config_fragment: Option<String>,
    /// The machine, once pinned: its name and inventory when pinned.
    pub machine: Option<serde_json::Value>,
    /// What the comparison waits for when it is not moving (its machine
    /// stopped calling the server, or no runner is calling at all).
    pub waiting: Option<String>,
    /// Boot order in A (base) / B (patched) notation, e.g. `ABBABA`.
    pub boot_order: String,
    /// Seed the order was drawn from.
    pub order_seed: u64,
    /// Jobs in claim order.
    pub jobs: Vec<JobView>,
    /// Runs uploaded so far.
    pub runs: RunCounts,
    /// The statistical verdict, from the runs stored so far (see
    /// [`crate::report::verdict::VerdictView`]).
    pub verdict: crate::report::verdict::VerdictView,
}

/// The patch series of a comparison.
#[derive(Debug, Serialize)]
pub struct PatchesView {
    /// sha256 of the mbox.
    pub sha256: String,
    /// Its messages in order.
    pub messages: Vec<PatchRow>,
}

/// Progress of one job.
#[derive(Debug, Serialize)]
pub struct JobView {
    /// Job id.
    pub id: i64,
    /// Claim order.
    pub seq: i32,
    /// Current state.
    pub state: String,
    /// Claims so far.
    pub attempt: i32,
    /// Claims allowed.
    pub max_attempts: i32,
    /// Last progress message.
    pub message: String,
    /// Its boots in order.
    pub boots: Vec<BootView>,
    /// Why it failed.
    pub failure: Option<FailureView>,
    /// Last log tail reported.
    pub log_tail: String,
    /// Runs uploaded by this job.
    pub runs: RunCounts,
    /// When the lease runs out (while leased).
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A boot of a job.
#[derive(Debug, Serialize)]
pub struct BootView {
    /// Comparison-wide position.
    pub seq: i32,
    /// base or patched.
    pub side: String,
}

/// A job's failure.
#[derive(Debug, Serialize)]
pub struct FailureView {
    /// Machine-readable reason (`patch-does-not-apply`).
    pub reason: String,
    /// The reason in words.
    pub reason_text: String,
    /// Specifics.
    pub detail: String,
}

/// Runs uploaded, per side, against how many a complete comparison has.
#[derive(Debug, Default, Serialize)]
pub struct RunCounts {
    /// Base runs stored.
    pub base: i64,
    /// Patched runs stored.
    pub patched: i64,
    /// Runs a side when everything completes: boots × workloads × nr_task.
    pub expected_per_side: i64,
}

async fn show(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Json<ComparisonView>> {
    let c = db::comparisons::find(&state.db, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?;
    let (_, sha256) = db::patches::mbox(&state.db, c.series_id).await?;
    let messages = db::patches::messages(&state.db, c.series_id).await?;
    let jobs = db::jobs::for_comparison(&state.db, id).await?;
    let boots = db::boots::for_comparison(&state.db, id).await?;
    let counts = db::runs::counts_per_job(&state.db, id).await?;
    let report = crate::report::load(&state, &c).await?;
    let waiting = crate::waiting::note(&state.db, &c).await?;
    let verdict = crate::report::verdict::verdict_view(
        &report,
        state
            .config
            .link(&format!("/api/v1/comparisons/{id}/report.txt")),
    );

    let per_boot = i64::try_from(c.workloads.len() * c.params.0.nr_task.len()).unwrap_or(0);
    let jobs_view: Vec<JobView> = jobs
        .into_iter()
        .map(|j| job_view(j, &boots, &counts, per_boot))
        .collect();
    let runs = RunCounts {
        base: jobs_view.iter().map(|j| j.runs.base).sum(),
        patched: jobs_view.iter().map(|j| j.runs.patched).sum(),
        expected_per_side: i64::from(c.runs_per_side) * per_boot,
    };
    let boot_order = interleave::notation(boots.iter().map(|b| b.side));
    let machine = match (&c.machine_name, c.machine_inventory) {
        (Some(_), Some(inv)) => Some(inv),
        (Some(name), None) => Some(serde_json::json!({ "name": name })),
        _ => None,
    };
    Ok(Json(ComparisonView {
        id: c.id,
        kind: c.kind.as_str().into(),
        status: c.status.as_str().into(),
        report_url: state.config.link(&format!("/comparisons/{id}")),
        submitted_by: c.submitted_by,
        created_at: c.created_at,
        updated_at: c.updated_at,
        finished_at: c.finished_at,
        base: c.base.0,
        patches: PatchesView { sha256, messages },
        workloads: c.workloads,
        params: c.params.0,
        runs_per_side: c.runs_per_side,
        max_runs_per_side: c.max_runs_per_side,
        runs_added_at: c.runs_added_at,
        backend: c.backend,
        config_fragment: c.config_fragment,
        machine,
        waiting,
        boot_order,
        order_seed: c.order_seed as u64,
        jobs: jobs_view,
        runs,
        verdict,
    }))
}

fn job_view(j: JobRow, boots: &[BootRow], counts: &[(i64, i64, i64)], per_boot: i64) -> JobView {
    let (base, patched) = counts
        .iter()
        .find(|(job, _, _)| *job == j.id)
        .map_or((0, 0), |&(_, b, p)| (b, p));
    let failure = j.failure_reason.map(|reason| FailureView {
        reason: reason.code().into(),
        reason_text: reason.as_str().into(),
        detail: j.failure_detail.unwrap_or_default(),
    });
    let boots: Vec<BootView> = boots
        .iter()
        .filter(|b| b.job_id == j.id)
        .map(|b| BootView {
            seq: b.seq,
            side: b.side.as_str().into(),
        })
        .collect();
    let expected = per_boot * i64::try_from(boots.len()).unwrap_or(0) / 2;
    JobView {
        id: j.id,
        seq: j.seq,
        state: j.state.as_str().into(),
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

/// Query of `GET /api/v1/comparisons`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// queued, running, done, failed or cancelled.
    pub status: Option<String>,
    /// Machine name.
    pub machine: Option<String>,
    /// Workload name.
    pub workload: Option<String>,
    /// Overall verdict of finished comparisons: regression, improvement,
    /// no change, undecided or no results.
    pub verdict: Option<String>,
    /// Page size, 1–500 (50 by default).
    pub limit: Option<i64>,
    /// Only comparisons with a smaller id (the `next_before` of the
    /// previous page).
    pub before: Option<i64>,
}

/// `GET /api/v1/comparisons` answer.
#[derive(Debug, Serialize)]
pub struct ComparisonList {
    /// Newest first.
    pub comparisons: Vec<ComparisonSummary>,
    /// Pass as `before` for the next page; absent on the last page.
    pub next_before: Option<i64>,
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<ComparisonList>> {
    let status = super::one_of(
        "status",
        q.status.as_deref(),
        ComparisonStatus::ALL,
        ComparisonStatus::as_str,
    )?;
    let verdict = super::one_of(
        "verdict",
        q.verdict.as_deref(),
        OverallVerdict::ALL,
        OverallVerdict::as_str,
    )?;
    if q.verdict.is_some() {
        crate::report::stored::catch_up(&state).await?;
    }
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Error::BadRequest(format!("limit {limit} must be 1 to 500")));
    }
    let filter = ListFilter {
        status,
        machine: q.machine.as_deref(),
        workload: q.workload.as_deref(),
        verdict,
        before: q.before,
        limit,
    };
    let mut comparisons = db::comparisons::list(&state.db, &filter).await?;
    crate::report::stored::fill(&state, &mut comparisons).await?;
    let next_before = if comparisons.len() == usize::try_from(limit).unwrap_or(usize::MAX) {
        comparisons.last().map(|c| c.id)
    } else {
        None
    };
    Ok(Json(ComparisonList {
        comparisons,
        next_before,
    }))
}

/// Answer of `POST /api/v1/comparisons/{id}/cancel`.
#[derive(Debug, Serialize)]
pub struct CancelResponse {
    /// Comparison id.
    pub id: i64,
    /// `cancelled`.
    pub status: String,
}

async fn cancel(
    State(state): State<AppState>,
    auth: CiAuth,
    Path(id): Path<i64>,
) -> Result<Json<CancelResponse>> {
    let mut tx = state.db.begin().await?;
    lifecycle::cancel(&mut tx, id, &auth.caller.name).await?;
    tx.commit().await?;
    tracing::info!(comparison = id, by = %auth.caller.name, "comparison cancelled");
    Ok(Json(CancelResponse {
        id,
        status: ComparisonStatus::Cancelled.as_str().into(),
    }))
}
