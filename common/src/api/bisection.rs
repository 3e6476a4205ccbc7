//! `POST /api/v1/bisections` and what the server answers about a bisection:
//! the request CI sends (a good and a bad commit of a git repository, or a
//! comparison whose whole-series verdict moved), the checked submission the
//! server acts on, and the view of its probes and answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::git;
use super::setup::{AskedParams, Setup};
use super::setup::{check_config_fragment, check_params, check_runs, check_workloads};
use crate::Error;
use crate::bisect::Judgement;
use crate::comparison::ComparisonStatus;
use crate::protocol::BaseSource;
use crate::run::TaskMode;
use crate::stats::Verdict;

/// The metric a bisection follows unless told otherwise: will-it-scale's
/// operations per task, every report's headline.
pub const DEFAULT_METRIC: &str = "will-it-scale.per_process_ops";

/// `POST /api/v1/bisections` body, as sent. Either `comparison`, or `base`
/// (a git base at the good commit) and `bad`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BisectionCreateRequest {
    /// Bisect this comparison's series (a git range's commits, or a mailed
    /// series' patches) on its base; its report is the check that the ends
    /// differ, and its parameters are the defaults of the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<i64>,
    /// The good end: `{"kind":"git","url":…,"commit":GOOD}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<BaseSource>,
    /// The bad end: a commit of `base.url` on whose first-parent line the
    /// good one lies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad: Option<String>,
    /// The workload whose metric moved.
    pub workload: String,
    /// The metric that moved (default `will-it-scale.per_process_ops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Parameters of every probe, with exactly one nr_task: the (mode,
    /// nr_task) that moved. Default: the comparison's, when it has one
    /// nr_task. A run length left out is the measurement mode's: the
    /// named one's, else the machine's best (the named machine or the
    /// comparison's), else a wall-clock mode's; one length for every probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<AskedParams>,
    /// Boots per side of each probe (default: the comparison's, else 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    pub runs: Option<u32>,
    /// Most boots per side of a probe whose verdict stays undecided
    /// (default: four times `runs`, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    pub max_runs: Option<u32>,
    /// Measurement mode to insist on (default: the comparison's, else the
    /// runner's best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::run::MeasurementMode>,
    /// Extra Kconfig lines for every kernel (default: the comparison's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_fragment: Option<String>,
    /// Machine to run every probe on; otherwise the machine that claims
    /// the first probe runs them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Seed of the probes' boot orders (random when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
}

impl BisectionCreateRequest {
    /// This request with every probe measured as `setup` says: its runs,
    /// most runs, backend, Kconfig fragment and machine (a bisection has
    /// one workload, its own, and no pool).
    pub fn measured_as(self, setup: Setup) -> BisectionCreateRequest {
        BisectionCreateRequest {
            runs: Some(setup.runs),
            max_runs: setup.max_runs,
            backend: setup.backend,
            config_fragment: setup.config_fragment,
            machine: setup.machine,
            ..self
        }
    }
}

checked!(
    /// A [`BisectionCreateRequest`] whose fields were checked on their own
    /// (the server checks what depends on stored data: the comparison, the
    /// repository). Read it through `Deref`; build it with `try_from`.
    BisectionSubmission(BisectionCreateRequest),
    check
);

fn check(req: BisectionCreateRequest) -> Result<BisectionCreateRequest, Error> {
    match (&req.comparison, &req.base, &req.bad) {
        (Some(_), None, None) => {}
        (None, Some(BaseSource::Git { url, commit }), Some(bad)) => {
            git::check_url(url).or_else(|why| invalid(format!("base.url {url:?}: {why}")))?;
            git::check_commit(commit)
                .or_else(|why| invalid(format!("base.commit {commit:?}: {why}")))?;
            git::check_commit(bad).or_else(|why| invalid(format!("bad {bad:?}: {why}")))?;
        }
        (None, Some(BaseSource::Tarball { .. }), _) => {
            return invalid(
                "a bisection between commits needs a git base (base.kind \"git\" at the \
                 good commit); a mailed series is bisected through its comparison"
                    .into(),
            );
        }
        _ => {
            return invalid("give either comparison, or base (the good commit) and bad".into());
        }
    }
    check_workloads(std::slice::from_ref(&req.workload))?;
    if let Some(metric) = &req.metric {
        let plain = !metric.is_empty()
            && metric.len() <= 200
            && !metric.chars().any(|c| c.is_control() || c.is_whitespace());
        if !plain {
            return invalid(format!(
                "metric {metric:?} must be a metric name such as \"{DEFAULT_METRIC}\""
            ));
        }
    }
    if let Some(params) = &req.params {
        check_params(&params.resolve(None))?;
        if params.nr_task.len() != 1 {
            return invalid(
                "params.nr_task must name the one task count whose metric moved".into(),
            );
        }
    }
    if let Some(runs) = req.runs {
        check_runs(runs, req.max_runs)?;
    } else if let Some(max) = req.max_runs {
        check_runs(super::MIN_RUNS, Some(max))?;
    }
    if let Some(fragment) = &req.config_fragment {
        check_config_fragment(fragment)?;
    }
    Ok(req)
}

fn invalid<T>(message: String) -> Result<T, Error> {
    Err(Error::InvalidSubmission(message))
}

/// `201` answer of `POST /api/v1/bisections`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BisectionCreated {
    /// The bisection id.
    pub id: i64,
    /// Where to poll it (this API).
    pub url: String,
    /// Where people read it.
    pub page_url: String,
}

/// Where a bisection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum BisectionStatus {
    /// Probes are queued or running.
    Running,
    /// It has its answer (a commit, candidates, or "not reproducible").
    Done,
    /// A probe of an end could not run, so there is no answer.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl BisectionStatus {
    /// Lower-case name as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            BisectionStatus::Running => "running",
            BisectionStatus::Done => "done",
            BisectionStatus::Failed => "failed",
            BisectionStatus::Cancelled => "cancelled",
        }
    }

    /// The status a stored spelling names.
    pub fn parse(s: &str) -> Option<BisectionStatus> {
        [
            BisectionStatus::Running,
            BisectionStatus::Done,
            BisectionStatus::Failed,
            BisectionStatus::Cancelled,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

#[cfg(feature = "sqlx")]
text_column!(BisectionStatus, as_str, parse);

/// How a bisection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeKind {
    /// One commit is the first bad one.
    Found,
    /// Skipped commits leave several candidates.
    OneOf,
    /// The ends do not differ in the metric.
    NotReproducible,
    /// An end could not be measured.
    Failed,
}

/// A bisection's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BisectionOutcome {
    /// Found, one of, not reproducible, failed.
    pub kind: OutcomeKind,
    /// The first bad commit's position in the series (1-based), when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<u32>,
    /// The candidates' positions, when skipped commits leave several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<u32>,
    /// The answer in 0-day's words.
    pub summary: String,
}

/// One commit (or patch) of the bisected series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BisectCommit {
    /// Position in the series (1-based): its probe boots patches 1..this.
    pub position: u32,
    /// Its commit id, for a git range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its subject.
    pub subject: String,
    /// Its author, `Name <email>` (the stored message's `From:`); empty
    /// when the message had none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub author: String,
}

/// One probe: a comparison of the good end against one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProbeView {
    /// Which commit of the series (1-based).
    pub position: u32,
    /// The commit.
    pub commit: BisectCommit,
    /// The probe's comparison.
    pub comparison_id: i64,
    /// Where people read its report.
    pub report_url: String,
    /// The comparison's status.
    pub status: ComparisonStatus,
    /// Boots per side so far (more while its verdict was undecided).
    pub runs_per_side: i32,
    /// The report's verdict on the bisected metric, once measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub verdict: Option<Verdict>,
    /// %change against the good end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// 95% interval of the change, low end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// 95% interval of the change, high end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// How the search counted it, once settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    /// Its verdict stayed undecided after every run; judged by its estimate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_estimate: bool,
    /// Why it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// `GET /api/v1/bisections/{id}` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BisectionView {
    /// Bisection id.
    pub id: i64,
    /// running, done, failed or cancelled.
    pub status: BisectionStatus,
    /// Where people read it.
    pub page_url: String,
    /// Name of the submitting token.
    pub submitted_by: String,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// The good end.
    pub base: BaseSource,
    /// For a git range: `GOOD..BAD` with full ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_range: Option<String>,
    /// The comparison it was started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison_id: Option<i64>,
    /// The workload whose metric is followed.
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Tasks, as asked.
    pub nr_task: String,
    /// The metric followed.
    pub metric: String,
    /// Boots per side of a probe at first.
    pub runs_per_side: i32,
    /// Most boots per side of an undecided probe.
    pub max_runs_per_side: i32,
    /// The machine the probes run on, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The series, commit by commit.
    pub commits: Vec<BisectCommit>,
    /// The probes in the order they were made; the first checks the ends
    /// (unless the comparison did).
    pub probes: Vec<ProbeView>,
    /// The answer, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<BisectionOutcome>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> BisectionCreateRequest {
        serde_json::from_value(serde_json::json!({
            "base": { "kind": "git", "url": "https://git.kernel.org/linux.git", "commit": "v6.1" },
            "bad": "vfs.all",
            "workload": "dup1",
        }))
        .unwrap()
    }

    fn rejection(req: BisectionCreateRequest) -> String {
        match BisectionSubmission::try_from(req) {
            Err(Error::InvalidSubmission(m)) => m,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn two_commits_or_a_comparison() {
        assert!(BisectionSubmission::try_from(request()).is_ok());
        let mut r = request();
        r.comparison = Some(3);
        assert!(rejection(r).starts_with("give either comparison"));
        let mut r = request();
        r.bad = None;
        assert!(rejection(r).starts_with("give either comparison"));
        let mut r = request();
        r.bad = Some("--output=/etc/passwd".into());
        assert!(rejection(r).contains("bad \"--output=/etc/passwd\""));
        let r: BisectionCreateRequest =
            serde_json::from_value(serde_json::json!({ "comparison": 4, "workload": "open1" }))
                .unwrap();
        assert!(BisectionSubmission::try_from(r).is_ok());
    }

    #[test]
    fn one_task_count_a_known_workload_and_a_plain_metric() {
        let mut r = request();
        r.workload = "open9".into();
        assert!(rejection(r).starts_with("unknown workload"));
        let mut r = request();
        r.metric = Some("per process\nops".into());
        assert!(rejection(r).contains("must be a metric name"));
        let mut r = request();
        r.params = serde_json::from_value(serde_json::json!({
            "nr_task": [1, 2], "seconds": 5, "warmup_seconds": 1
        }))
        .unwrap();
        assert!(rejection(r).contains("the one task count"));
        let mut r = request();
        r.runs = Some(2);
        assert!(rejection(r).starts_with("runs is 2"));
    }

    #[test]
    fn status_spellings_round_trip() {
        for s in [
            BisectionStatus::Running,
            BisectionStatus::Done,
            BisectionStatus::Failed,
            BisectionStatus::Cancelled,
        ] {
            assert_eq!(BisectionStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
