//! `POST /api/v1/comparisons`: the body CI sends, and the checked submission
//! the server acts on. A [`ComparisonSubmission`] exists only once every
//! field was checked, so the handler cannot forget a check and the rules
//! live beside the fields they govern.

use serde::{Deserialize, Serialize};

use super::git;
use super::setup::{Setup, check_workloads};
use crate::Error;
use crate::protocol::BaseSource;

/// `POST /api/v1/comparisons` body, as sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Unknown fields are refused by the flattened `Setup`'s `others`.
pub struct ComparisonCreateRequest {
    /// Base tree: `{"kind":"git","url":…,"commit":…}` or
    /// `{"kind":"tarball","name":"linux-source-6.1"}`.
    pub base: BaseSource,
    /// The patch series as mbox text (absent for an A/A comparison).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mbox: String,
    /// An A/A comparison: both sides boot the base kernel, no patch. Its
    /// spread becomes the machine's noise floor, the smallest change later
    /// reports on that machine call real.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aa: bool,
    /// Measure each patch on its own as well: a series of N ≥ 2 patches
    /// becomes the whole-series comparison plus N step comparisons, step k
    /// booting patches 1..k-1 against patches 1..k.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_patch: bool,
    /// A git range `A..B` over a git base whose commit is `A`: every commit
    /// on B's first-parent line after A is a step (a merge is one step, its
    /// diff against its first parent), measured as `per_patch` measures a
    /// series; the server reads the commits from the repository and leaves
    /// `mbox` to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = "v6.1..perf-fixes"))]
    pub range: Option<String>,
    /// What to measure and where (flattened: its fields sit beside these).
    #[serde(flatten)]
    pub setup: Setup,
    /// Seed of the random boot order (random when absent); to reproduce an
    /// order exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
}

checked!(
    /// A [`ComparisonCreateRequest`] whose every field was checked: a known,
    /// plain base; known workloads, each once; task counts, durations and runs
    /// in range; a Kconfig fragment of Kconfig lines; no patch on an A/A
    /// comparison. Read it through `Deref`; build it with `try_from`.
    ComparisonSubmission(ComparisonCreateRequest),
    check
);

/// Checks in the order a reader of the request meets the fields; the
/// first problem is named with the field's JSON path.
fn check(req: ComparisonCreateRequest) -> Result<ComparisonCreateRequest, Error> {
    check_base(&req.base)?;
    // None named: the server takes them from the workload map, by the
    // files the series touches; an A/A touches none.
    if req.aa {
        check_workloads(&req.setup.workloads)?;
    }
    req.setup.check()?;
    if req.aa && !req.mbox.trim().is_empty() {
        return invalid(
            "an A/A comparison (aa: true) boots the base kernel on both sides; \
             leave out mbox"
                .into(),
        );
    }
    if let Some(range) = &req.range {
        check_range(&req, range)?;
    }
    if req.aa && req.per_patch {
        return invalid(
            "an A/A comparison (aa: true) has no patch to measure one by one; \
             leave out per_patch"
                .into(),
        );
    }
    Ok(req)
}

fn invalid<T>(message: String) -> Result<T, Error> {
    Err(Error::InvalidSubmission(message))
}

fn check_base(base: &BaseSource) -> Result<(), Error> {
    match base {
        BaseSource::Git { url, commit } => {
            if url.trim().is_empty() {
                return invalid("base.url must not be empty".into());
            }
            if let Err(why) = git::check_url(url) {
                return invalid(format!(
                    "base.url {url:?} is not a URL to fetch from: {why}"
                ));
            }
            if commit.trim().is_empty() {
                return invalid(format!(
                    "base.commit {commit:?} must be a commit id, tag or branch"
                ));
            }
            if let Err(why) = git::check_commit(commit) {
                return invalid(format!(
                    "base.commit {commit:?} must be a commit id, tag or branch: {why}"
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
                return invalid(format!(
                    "base.name {name:?} must be a plain tarball name such as \"linux-source-6.1\""
                ));
            }
        }
    }
    Ok(())
}

/// A range names its commits itself: it needs a git base starting at its
/// first end, and no mbox.
fn check_range(req: &ComparisonCreateRequest, range: &str) -> Result<(), Error> {
    let (from, _) = git::parse_range(range)
        .or_else(|why| invalid(format!("range {range:?} is not `A..B`: {why}")))?;
    match &req.base {
        BaseSource::Git { commit, .. } if commit == from => {}
        BaseSource::Git { commit, .. } => {
            return invalid(format!(
                "range {range:?} starts at `{from}` but base.commit is `{commit}`; \
                 the base of a range is its first end"
            ));
        }
        BaseSource::Tarball { .. } => {
            return invalid(format!(
                "range {range:?} needs a git base (base.kind \"git\" with commit `{from}`)"
            ));
        }
    }
    if !req.mbox.trim().is_empty() {
        return invalid("a range's patches are its commits; leave out mbox".into());
    }
    if req.aa {
        return invalid("an A/A comparison (aa: true) has no range; leave out range".into());
    }
    Ok(())
}

pub use super::setup::{ALIGN_FUNCTIONS_LINE, aligns_functions};

/// What a report says of code layout: whether both kernels were built with
/// functions aligned, and what that means for a measurement `mode`.
pub fn code_layout_line(aligned: bool, mode: Option<crate::run::MeasurementMode>) -> String {
    let wall_clock = mode.is_some_and(|m| m != crate::run::MeasurementMode::TcgIcount);
    match (aligned, wall_clock) {
        (true, _) => format!(
            "code layout: both kernels built with every function aligned to 64 bytes \
             ({ALIGN_FUNCTIONS_LINE}): the patch moves the addresses of its own functions only"
        ),
        (false, true) => "code layout: function alignment not forced; on wall clock a change \
                          of 1–5% can be code layout alone (submit --align-functions to check)"
            .to_string(),
        (false, false) => "code layout: function alignment not forced (instruction counts \
                           barely depend on it)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::setup::{AskedParams, MAX_RUNS, default_max_runs};
    use crate::protocol::NrTask;
    use crate::run::TaskMode;
    use crate::workload;

    #[test]
    fn wall_clock_comparisons_may_grow_by_default() {
        use crate::run::MeasurementMode::{Kexec, Tcg, TcgIcount};
        assert_eq!(default_max_runs(3, Some(Tcg), false), Some(12));
        assert_eq!(default_max_runs(30, Some(Kexec), false), Some(MAX_RUNS));
        assert_eq!(default_max_runs(3, Some(Tcg), true), None);
        assert_eq!(default_max_runs(3, Some(TcgIcount), false), Some(12));
        assert_eq!(default_max_runs(3, None, false), None);
    }

    #[test]
    fn a_run_length_left_out_is_the_measurement_modes() {
        use crate::run::MeasurementMode::{Kexec, TcgIcount};
        let mut asked = request().setup.params;
        asked.seconds = None;
        asked.warmup_seconds = None;
        assert!(asked.leaves_run_length());
        let icount = asked.resolve(Some(TcgIcount));
        assert_eq!((icount.seconds, icount.warmup_seconds), (1, 1));
        let metal = asked.resolve(Some(Kexec));
        assert_eq!((metal.seconds, metal.warmup_seconds), (5, 2));
        assert_eq!(
            asked.resolve(None),
            metal,
            "no mode known: a wall-clock length"
        );
        // What is given stays, whatever the mode.
        asked.seconds = Some(3);
        let given = asked.resolve(Some(TcgIcount));
        assert_eq!((given.seconds, given.warmup_seconds), (3, 1));
        let full = request().setup.params;
        assert!(!full.leaves_run_length());
        assert_eq!(AskedParams::from(full.resolve(Some(TcgIcount))), full);
        // Left out in JSON, the field is absent, not null.
        let json = serde_json::to_value(&asked).unwrap();
        assert!(json.get("warmup_seconds").is_none(), "{json}");
    }

    #[test]
    fn the_alignment_line_is_found_and_said() {
        assert!(aligns_functions(Some(
            "# ours\nCONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n"
        )));
        assert!(!aligns_functions(Some(
            "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=n"
        )));
        assert!(!aligns_functions(None));
        use crate::run::MeasurementMode::{Kvm, TcgIcount};
        assert!(code_layout_line(true, Some(Kvm)).contains("aligned to 64 bytes"));
        assert!(code_layout_line(false, Some(Kvm)).contains("1–5% can be code layout alone"));
        assert!(code_layout_line(false, Some(TcgIcount)).contains("barely depend on it"));
    }
    fn request() -> ComparisonCreateRequest {
        ComparisonCreateRequest {
            base: BaseSource::Tarball {
                name: "linux-source-6.1".into(),
            },
            mbox: "From x\n".into(),
            aa: false,
            per_patch: false,
            range: None,
            setup: Setup::new(
                vec![workload::WORKLOADS[0].name.to_string()],
                AskedParams {
                    mode: TaskMode::Process,
                    nr_task: vec![NrTask::Count(1)],
                    seconds: Some(5),
                    warmup_seconds: Some(1),
                    perf_stat: false,
                    perf_profile: false,
                },
                3,
            ),
            order_seed: None,
        }
    }

    fn rejection(req: ComparisonCreateRequest) -> String {
        match ComparisonSubmission::try_from(req) {
            Err(Error::InvalidSubmission(m)) => m,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn a_sound_request_is_accepted_unchanged() {
        let checked = ComparisonSubmission::try_from(request()).unwrap();
        assert_eq!(*checked, request());
    }

    #[test]
    fn runs_must_lie_between_the_bounds_and_max_runs_above_runs() {
        let mut r = request();
        r.setup.runs = MAX_RUNS + 1;
        assert_eq!(
            rejection(r),
            "runs is 101; a comparison needs 3 to 100 runs a side"
        );
        let mut r = request();
        r.setup.runs = 4;
        r.setup.max_runs = Some(3);
        assert_eq!(
            rejection(r),
            "max_runs is 3; it must be from runs (4) to 100"
        );
    }

    #[test]
    fn an_aa_comparison_carries_no_patch() {
        let mut r = request();
        r.aa = true;
        assert!(rejection(r).ends_with("leave out mbox"));
        let mut r = request();
        r.aa = true;
        r.mbox = " \n".into();
        assert!(ComparisonSubmission::try_from(r.clone()).is_ok());
        r.per_patch = true;
        assert!(rejection(r).ends_with("leave out per_patch"));
    }

    #[test]
    fn the_wire_form_leaves_out_what_is_unset() {
        let mut r = request();
        r.mbox.clear();
        r.aa = true;
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("mbox").is_none() && json.get("order_seed").is_none());
        assert_eq!(json["aa"], true);
        let back: ComparisonCreateRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_range_starts_at_its_git_base_and_brings_no_mbox() {
        let git = |commit: &str| BaseSource::Git {
            url: "https://git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git".into(),
            commit: commit.into(),
        };
        let mut r = request();
        r.mbox.clear();
        r.base = git("v6.1");
        r.range = Some("v6.1..vfs.all".into());
        assert!(ComparisonSubmission::try_from(r.clone()).is_ok());
        let mut other = r.clone();
        other.base = git("v6.2");
        assert!(rejection(other).contains("the base of a range is its first end"));
        let mut tarball = r.clone();
        tarball.base = request().base;
        assert!(rejection(tarball).contains("needs a git base"));
        let mut with_mbox = r.clone();
        with_mbox.mbox = "From x\n".into();
        assert!(rejection(with_mbox).ends_with("leave out mbox"));
        let mut odd = r.clone();
        odd.range = Some("v6.1...vfs.all".into());
        assert!(rejection(odd).contains("is not `A..B`"));
    }
}
