//! What the CI API answers about comparisons: the `201` of a submission,
//! the progress view of `GET /api/v1/comparisons/{id}`, the answer to a
//! cancel, and the filters of the listing. The server serializes these;
//! `runner submit --wait` reads them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::comparison::{ComparisonKind, ComparisonStatus, OverallVerdict};
use crate::protocol::{BaseSource, FailureReason, JobState, WorkloadParams};
use crate::run::{Side, TaskMode};
use crate::stats::Verdict;

/// `201` answer of `POST /api/v1/comparisons`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ComparisonCreated {
    /// The comparison id.
    pub id: i64,
    /// Where to poll its progress (this API).
    pub url: String,
    /// Where people read the report.
    pub report_url: String,
    /// The workloads it measures: those asked for, else the workload
    /// map's for the files the series touches.
    #[serde(default)]
    pub workloads: Vec<String>,
}

/// `GET /api/v1/comparisons/{id}` answer. `V` is the statistical verdict:
/// the server sends it whole, a client may read only the part it needs
/// (such as [`VerdictSummary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ComparisonView<V> {
    /// Comparison id.
    pub id: i64,
    /// `ab` (base against patched) or `aa` (base against itself, for the
    /// machine's noise floor).
    pub kind: ComparisonKind,
    /// queued, running, done, failed or cancelled.
    pub status: ComparisonStatus,
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
    /// A git range's comparison: the range measured, `A..B` with full ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_range: Option<String>,
    /// The commit the patched side is (a range's end, or a step's commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The patch series.
    pub patches: PatchesView,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Parameters.
    pub params: WorkloadParams,
    /// The run length was left to the measurement mode and no machine has
    /// claimed the comparison yet: `params`' seconds are a wall-clock
    /// mode's until one does (1 s after 1 s under tcg-icount).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_length_pending: bool,
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
    /// The machine, once pinned: its name and inventory.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub machine: Option<serde_json::Value>,
    /// The pool it was asked to run on (its machine, once pinned, is one
    /// of it); absent from servers without pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// What the comparison waits for when it is not moving (its machine
    /// stopped calling the server, or no runner is calling at all).
    pub waiting: Option<String>,
    /// What runs for the comparison now and about how long is left: its
    /// machine's calibration first, the step of a series, which job doing
    /// what, the machine's last build time and its recent pace of boots.
    #[serde(default)]
    pub progress: Option<String>,
    /// Why a failed comparison failed, in the words its page and
    /// `report.txt` open with: `patch 2/3 does not apply`, `build failed:
    /// fs/file.c:12:5: error: …`, `boot failed: …`.
    #[serde(default)]
    pub failure: Option<String>,
    /// Boot order in A (base) / B (patched) notation, e.g. `ABBABA`.
    pub boot_order: String,
    /// Seed the order was drawn from.
    pub order_seed: u64,
    /// Jobs in claim order.
    pub jobs: Vec<JobView>,
    /// Runs uploaded so far.
    pub runs: RunCounts,
    /// The statistical verdict, from the runs stored so far.
    pub verdict: V,
    /// A per-patch comparison's steps, patch by patch (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepView>,
    /// For a step of a per-patch comparison: which patch it measures and
    /// the whole-series comparison it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_of: Option<StepOf>,
}

/// Where a step comparison belongs: patch `step` of `of`, measured against
/// patch `step - 1` (the pristine base for the first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepOf {
    /// The whole-series comparison.
    pub parent_id: i64,
    /// Which patch (1-based).
    pub step: u32,
    /// Patches in the series.
    pub of: u32,
    /// The patch's subject.
    pub subject: String,
    /// For a git range's step: its commit (measured against its parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// One step of a per-patch comparison as the whole-series one lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepView {
    /// Which patch (1-based).
    pub step: u32,
    /// The step's own comparison.
    pub comparison_id: i64,
    /// The patch's subject.
    pub subject: String,
    /// For a git range: the commit the step measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// queued, running, done, failed or cancelled.
    pub status: ComparisonStatus,
    /// Overall verdict of the step's runs so far.
    pub overall: OverallVerdict,
    /// Each report's headline metric, in report order.
    pub headlines: Vec<StepHeadline>,
    /// Why the step did not run or failed, in the line its own page opens
    /// with (`patch 2/2 "…" does not apply to …: error: patch failed: …`).
    pub failure: Option<String>,
}

/// The headline metric of one (workload, mode, nr_task) report of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepHeadline {
    /// Workload name.
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Tasks.
    pub nr_task: u32,
    /// The headline metric's name.
    pub metric: String,
    /// %change (points for a percentage metric); absent when a side has
    /// no value.
    pub change: Option<f64>,
    /// Its verdict: improvement, regression, changed, no-change, undecided.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub verdict: Verdict,
}

/// The part of a comparison's verdict a CI job prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerdictSummary {
    /// regression, improvement, no change, undecided or no results.
    pub overall: OverallVerdict,
    /// The headline sentence of each report.
    pub headlines: Vec<String>,
}

/// The patch series of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PatchesView {
    /// sha256 of the mbox.
    pub sha256: String,
    /// Its messages in order.
    pub messages: Vec<PatchMessage>,
}

/// One message of a patch series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PatchMessage {
    /// 0-based position in the mbox.
    pub position: i32,
    /// `Subject:` header, unfolded and decoded.
    pub subject: String,
    /// `Message-ID:` without angle brackets, if present.
    pub message_id: Option<String>,
    /// `From:` header.
    pub author: String,
    /// Whether the message carries a diff (a cover letter does not).
    pub has_diff: bool,
}

/// Progress of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobView {
    /// Job id.
    pub id: i64,
    /// Claim order.
    pub seq: i32,
    /// Current state.
    pub state: JobState,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BootView {
    /// Comparison-wide position.
    pub seq: i32,
    /// base or patched.
    pub side: Side,
}

/// A job's failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailureView {
    /// Machine-readable reason (`patch-does-not-apply`).
    pub reason: FailureReason,
    /// The reason in words.
    pub reason_text: String,
    /// Specifics.
    pub detail: String,
}

/// Runs uploaded, per side, against how many a complete comparison has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunCounts {
    /// Base runs stored.
    pub base: i64,
    /// Patched runs stored.
    pub patched: i64,
    /// Runs a side when everything completes: boots × workloads × nr_task.
    pub expected_per_side: i64,
}

/// Answer of `POST /api/v1/comparisons/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CancelResponse {
    /// Comparison id.
    pub id: i64,
    /// `cancelled`.
    pub status: ComparisonStatus,
}

/// Query of `GET /api/v1/comparisons`: filters and a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ComparisonListQuery {
    /// queued, running, done, failed or cancelled.
    pub status: Option<String>,
    /// Machine name.
    pub machine: Option<String>,
    /// Workload name.
    pub workload: Option<String>,
    /// Overall verdict of finished comparisons: regression, improvement,
    /// no change, undecided or no results.
    pub verdict: Option<String>,
    /// A word of a patch's subject or author (any part, any case), or a
    /// patch's Message-Id (with or without `<>`); at most 200 characters.
    pub q: Option<String>,
    /// Page size, 1–500 (50 by default).
    #[cfg_attr(feature = "openapi", param(minimum = 1, maximum = 500))]
    pub limit: Option<i64>,
    /// Only comparisons with a smaller id (the `next_before` of the
    /// previous page, newest first).
    pub before: Option<i64>,
    /// Only comparisons with a larger id (the `next_after` of the previous
    /// page, oldest first).
    pub after: Option<i64>,
    /// `newest` (the default) or `oldest` first.
    pub sort: Option<String>,
}
