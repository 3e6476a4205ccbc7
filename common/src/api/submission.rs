//! `POST /api/v1/comparisons`: the body CI sends, and the checked submission
//! the server acts on. A [`ComparisonSubmission`] exists only once every
//! field was checked, so the handler cannot forget a check and the rules
//! live beside the fields they govern.

use serde::{Deserialize, Serialize};

use super::git;
use crate::Error;
use crate::limits::MAX_NR_TASK_ASKED;
use crate::protocol::{BaseSource, NrTask, WorkloadParams, run_length_of};
use crate::run::{MeasurementMode, TaskMode};
use crate::workload;

/// Fewest runs a side: fewer cannot give a confidence interval worth
/// printing.
pub const MIN_RUNS: u32 = 3;
/// Most runs a side: beyond this a comparison occupies a machine for days.
pub const MAX_RUNS: u32 = 100;

/// `POST /api/v1/comparisons` body, as sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
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
    /// Workload names from the catalogue. Empty or left out: the workloads
    /// the workload map gives the files the series touches (a series that
    /// touches only files no workload exercises is refused, naming them).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = super::schema::workload_names))]
    pub workloads: Vec<String>,
    /// Workload parameters; the run length may be left to the measurement
    /// mode.
    pub params: AskedParams,
    /// Boots per side (each boot runs every workload once per nr_task).
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    pub runs: u32,
    /// When every job is done and a headline verdict is still undecided,
    /// add boots (doubling the runs a side) up to this many a side. Absent:
    /// four times `runs` for an A/B comparison that asks for a wall-clock
    /// backend (tcg, kvm, kexec, host: noise that more runs average out),
    /// else `runs` is final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    pub max_runs: Option<u32>,
    /// Measurement mode to insist on; the runner's best when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<MeasurementMode>,
    /// Extra Kconfig lines for both kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_fragment: Option<String>,
    /// Name of the machine to run on; the first machine to claim otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// A pool to run on instead of one machine: the first machine labelled
    /// so to claim it runs all of it. Not with `machine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Seed of the random boot order (random when absent); to reproduce an
    /// order exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
}

/// Workload parameters as a submission asks for them: those of
/// [`WorkloadParams`], with the run length (`seconds`, `warmup_seconds`)
/// left out to get the measurement mode's ([`run_length_of`]), fixed when
/// the mode is: at submission when it names its mode or machine, else
/// when a machine claims the comparison.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AskedParams {
    /// Processes or threads.
    #[serde(default)]
    pub mode: TaskMode,
    /// One or more task counts; each is its own report.
    pub nr_task: Vec<NrTask>,
    /// Measured seconds per run; absent: the measurement mode's (1 under
    /// tcg-icount, else 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
    /// Warm-up seconds per run, dropped; absent: the measurement mode's (1
    /// under tcg-icount, else 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_seconds: Option<u32>,
    /// Collect `perf stat` metrics.
    #[serde(default)]
    pub perf_stat: bool,
    /// Collect `perf-profile.*` metrics.
    #[serde(default)]
    pub perf_profile: bool,
}

impl AskedParams {
    /// Whether the measurement mode chooses the run length (or part of it).
    pub fn leaves_run_length(&self) -> bool {
        self.seconds.is_none() || self.warmup_seconds.is_none()
    }

    /// The parameters to measure with in `mode`; with no mode known yet,
    /// a wall-clock mode's length, which is also what a runner of the
    /// previous release measures when it claims the comparison.
    pub fn resolve(&self, mode: Option<MeasurementMode>) -> WorkloadParams {
        let (seconds, warmup) = run_length_of(mode.unwrap_or(MeasurementMode::Kvm));
        WorkloadParams {
            mode: self.mode,
            nr_task: self.nr_task.clone(),
            seconds: self.seconds.unwrap_or(seconds),
            warmup_seconds: self.warmup_seconds.unwrap_or(warmup),
            perf_stat: self.perf_stat,
            perf_profile: self.perf_profile,
        }
    }
}

impl From<WorkloadParams> for AskedParams {
    fn from(p: WorkloadParams) -> Self {
        AskedParams {
            mode: p.mode,
            nr_task: p.nr_task,
            seconds: Some(p.seconds),
            warmup_seconds: Some(p.warmup_seconds),
            perf_stat: p.perf_stat,
            perf_profile: p.perf_profile,
        }
    }
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
    if !req.workloads.is_empty() || req.aa {
        check_workloads(&req.workloads)?;
    }
    // What is left out is the mode's, in range whichever mode it is.
    check_params(&req.params.resolve(None))?;
    check_runs(req.runs, req.max_runs)?;
    if let Some(fragment) = &req.config_fragment {
        check_config_fragment(fragment)?;
    }
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
    crate::machine_state::check_machine_or_pool(req.machine.as_deref(), req.pool.as_deref())
        .or_else(invalid)?;
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

pub(crate) fn check_workloads(workloads: &[String]) -> Result<(), Error> {
    let known = || {
        workload::WORKLOADS
            .iter()
            .map(|w| w.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if workloads.is_empty() {
        return invalid(format!("workloads must name at least one of: {}", known()));
    }
    for (i, w) in workloads.iter().enumerate() {
        if workload::find(w).is_none() {
            return invalid(format!(
                "unknown workload `{w}`; known workloads: {}",
                known()
            ));
        }
        if workloads[..i].contains(w) {
            return invalid(format!("workload `{w}` is listed twice"));
        }
    }
    Ok(())
}

pub(crate) fn check_params(p: &WorkloadParams) -> Result<(), Error> {
    if p.nr_task.is_empty() || p.nr_task.len() > 16 {
        return invalid("params.nr_task must list 1 to 16 task counts".into());
    }
    for n in &p.nr_task {
        match n {
            NrTask::Count(0) => {
                return invalid("params.nr_task: a task count must be at least 1".into());
            }
            NrTask::Count(c) if *c > MAX_NR_TASK_ASKED => {
                return invalid(format!(
                    "params.nr_task: {c} tasks is more than {MAX_NR_TASK_ASKED}"
                ));
            }
            NrTask::Percent(p) if *p == 0 || *p > 100 => {
                return invalid(format!("params.nr_task: {p}% must be 1–100%"));
            }
            _ => {}
        }
    }
    if !(1..=600).contains(&p.seconds) {
        return invalid(format!(
            "params.seconds is {}; it must be 1 to 600 measured seconds",
            p.seconds
        ));
    }
    if p.warmup_seconds > 300 {
        return invalid(format!(
            "params.warmup_seconds is {}; at most 300",
            p.warmup_seconds
        ));
    }
    Ok(())
}

pub(crate) fn check_runs(runs: u32, max_runs: Option<u32>) -> Result<(), Error> {
    if !(MIN_RUNS..=MAX_RUNS).contains(&runs) {
        return invalid(format!(
            "runs is {runs}; a comparison needs {MIN_RUNS} to {MAX_RUNS} runs a side"
        ));
    }
    match max_runs {
        Some(max) if max < runs || max > MAX_RUNS => invalid(format!(
            "max_runs is {max}; it must be from runs ({runs}) to {MAX_RUNS}"
        )),
        _ => Ok(()),
    }
}

/// The Kconfig line that aligns every kernel function to 64 bytes (x86-64,
/// arm64, powerpc, arc; since 5.10): a commit then moves the addresses of
/// its own functions only, not those of every function linked after them.
pub const ALIGN_FUNCTIONS_LINE: &str = "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y";

/// Whether a comparison's config fragment forces function alignment.
pub fn aligns_functions(fragment: Option<&str>) -> bool {
    fragment.is_some_and(|f| f.lines().any(|l| l.trim() == ALIGN_FUNCTIONS_LINE))
}

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

/// The most runs a side an A/B comparison may grow to when its submission
/// names none: four times `runs` (two more looks) when it names its
/// `backend`, where more boots narrow an interval that straddles δ and the
/// level is spent over the looks. Under `tcg-icount` too: a workload's
/// boot-to-boot spread is small but not nil (open2's reached 0.08% in
/// BENCHMARKS' "How still tcg-icount is", against a δ of 0.10%), and an
/// interval that straddles δ there said "undecided" on a path the patch
/// cannot touch. None for an A/A comparison, or when the runner chooses
/// the mode.
pub fn default_max_runs(runs: u32, backend: Option<MeasurementMode>, aa: bool) -> Option<u32> {
    match backend {
        None => None,
        Some(_) if aa => None,
        Some(_) => Some(grown_runs(runs)),
    }
}

/// How far `runs` a side grows while undecided when nothing caps it: two
/// more looks, each doubling, so four times, at most [`MAX_RUNS`]. A
/// submission grows so when it names its backend ([`default_max_runs`]);
/// a bisection's probes always do.
pub fn grown_runs(runs: u32) -> u32 {
    runs.saturating_mul(4).min(MAX_RUNS)
}

/// Only lines `make olddefconfig` reads as settings, or comments: anything
/// else is a mistake (or a shell command) the build would silently ignore.
pub(crate) fn check_config_fragment(fragment: &str) -> Result<(), Error> {
    for line in fragment.lines().map(str::trim) {
        let ok = line.is_empty()
            || (line.starts_with("CONFIG_") && line.contains('='))
            || (line.starts_with("# CONFIG_") && line.ends_with(" is not set"))
            || (line.starts_with('#') && !line.starts_with("# CONFIG_"));
        if !ok {
            return invalid(format!(
                "config_fragment line {line:?} is not `CONFIG_FOO=value` or \
                 `# CONFIG_FOO is not set`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut asked = request().params;
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
        let full = request().params;
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
            workloads: vec![workload::WORKLOADS[0].name.to_string()],
            params: AskedParams {
                mode: TaskMode::Process,
                nr_task: vec![NrTask::Count(1)],
                seconds: Some(5),
                warmup_seconds: Some(1),
                perf_stat: false,
                perf_profile: false,
            },
            runs: 3,
            max_runs: None,
            backend: None,
            config_fragment: None,
            machine: None,
            pool: None,
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
        r.runs = MAX_RUNS + 1;
        assert_eq!(
            rejection(r),
            "runs is 101; a comparison needs 3 to 100 runs a side"
        );
        let mut r = request();
        r.runs = 4;
        r.max_runs = Some(3);
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
