//! How a comparison is measured: the workloads, their parameters, the
//! boots a side, the backend, the machine or pool and the Kconfig
//! fragment. A CI submission and a tracked tree ask with one [`Setup`]
//! (flattened into their JSON, so the wire form is as before), the server
//! queues every comparison from one and reads one back from a comparison's,
//! tree's or bisection's row, and `runner submit`/`track`/`submit
//! --bisect` build it once from their flags. A new setting is a field
//! here with its check in [`Setup::check`], the code that acts on it, and
//! (until the rows keep a setup as one value) a column.
//!
//! The rules for each field live here too, shared by the requests that
//! spell a setting on their own terms (a list's defaults, a bisection's
//! inherited ones).

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::Error;
use crate::limits::MAX_NR_TASK_ASKED;
use crate::protocol::{BaseSource, BootSlot, JobSpec, NrTask, WorkloadParams, run_length_of};
use crate::run::{MeasurementMode, TaskMode};
use crate::workload;

/// Fewest runs a side: fewer cannot give a confidence interval worth
/// printing.
pub const MIN_RUNS: u32 = 3;
/// Most runs a side: beyond this a comparison occupies a machine for days.
pub const MAX_RUNS: u32 = 100;

/// What to measure and where, as asked.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Setup {
    /// Workload names from the catalogue. Empty or left out: the workloads
    /// the workload map gives the files the series (or a tree's new
    /// commits) touch; what touches only files no workload exercises is
    /// not measured, and the answer names those files.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = super::schema::workload_names))]
    #[serde(deserialize_with = "named::workloads")]
    pub workloads: Vec<String>,
    /// Workload parameters; a run length (`seconds`, `warmup_seconds`)
    /// left out is the measurement mode's: a tracked tree fixes it when it
    /// is added (a history keeps one length), a comparison when its mode
    /// is known.
    #[serde(deserialize_with = "named::params")]
    pub params: AskedParams,
    /// Boots per side (each boot runs every workload once per nr_task).
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    #[serde(deserialize_with = "named::runs")]
    pub runs: u32,
    /// When every job is done and a headline verdict is still undecided,
    /// add boots (doubling the runs a side) up to this many a side. Absent:
    /// four times `runs` for an A/B comparison that asks for a backend,
    /// else `runs` is final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 3, maximum = 100))]
    #[serde(deserialize_with = "named::max_runs")]
    pub max_runs: Option<u32>,
    /// Measurement mode to insist on; the runner's best when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "named::backend")]
    pub backend: Option<MeasurementMode>,
    /// Extra Kconfig lines for both kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "named::config_fragment")]
    pub config_fragment: Option<String>,
    /// Name of the machine to run on; the first machine to claim otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "named::machine")]
    pub machine: Option<String>,
    /// A pool to run on instead of one machine: the first machine labelled
    /// so to claim a comparison runs all of it. Not with `machine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "named::pool")]
    pub pool: Option<String>,
    /// Refuses a field nobody reads, as `deny_unknown_fields` would (which
    /// serde cannot combine with flattening).
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub others: NoOtherFields,
}

impl Setup {
    /// `params` and `runs` on the catalogue's workloads `workloads`, on
    /// any machine, with nothing else asked.
    pub fn new(workloads: Vec<String>, params: AskedParams, runs: u32) -> Setup {
        Setup {
            workloads,
            params,
            runs,
            max_runs: None,
            backend: None,
            config_fragment: None,
            machine: None,
            pool: None,
            others: NoOtherFields,
        }
    }

    /// Checks every field on its own, naming the first problem with its
    /// JSON path. Workloads left empty are the map's, not a mistake.
    pub fn check(&self) -> Result<(), Error> {
        if !self.workloads.is_empty() {
            check_workloads(&self.workloads)?;
        }
        // What is left out is the mode's, in range whichever mode it is.
        check_params(&self.params.resolve(None))?;
        check_runs(self.runs, self.max_runs)?;
        if let Some(fragment) = &self.config_fragment {
            check_config_fragment(fragment)?;
        }
        crate::machine_state::check_machine_or_pool(self.machine.as_deref(), self.pool.as_deref())
            .or_else(invalid)
    }

    /// Whether both kernels are built with every function aligned
    /// ([`ALIGN_FUNCTIONS_LINE`] in the Kconfig fragment), which a
    /// report's code layout line states.
    pub fn aligns_functions(&self) -> bool {
        aligns_functions(self.config_fragment.as_deref())
    }

    /// The job that measures this setup without a server (`runner job`,
    /// `runner workload-map`): no ids, lease or base series; the series
    /// `mbox` (`aa`: the base against itself) over `base`, a run length
    /// left out the backend's, boot by boot in the order `boots`.
    pub fn local_job(
        self,
        base: BaseSource,
        mbox: String,
        aa: bool,
        boots: Vec<BootSlot>,
    ) -> JobSpec {
        JobSpec {
            job_id: 0,
            comparison_id: 0,
            attempt: 1,
            lease_seconds: 0,
            base,
            patches_sha256: crate::digest::sha256_hex(mbox.as_bytes()),
            mbox,
            aa,
            base_mbox: String::new(),
            base_patches_sha256: String::new(),
            params: self.params.resolve(self.backend),
            config_fragment: self.config_fragment,
            workloads: self.workloads,
            backend: self.backend,
            boots,
        }
    }

    /// Adds Kconfig `lines` to both kernels' fragment, on a line of their
    /// own after what it has.
    pub fn add_kconfig(&mut self, lines: &str) {
        let fragment = self.config_fragment.get_or_insert_with(String::new);
        if !fragment.is_empty() && !fragment.ends_with('\n') {
            fragment.push('\n');
        }
        fragment.push_str(lines);
    }
}

/// Each field's reader, naming the field in its error: flattened into a
/// request, the setup's fields are read from a buffer where the body
/// reader's path (`params.nr_task[0]: …`) cannot follow them.
mod named {
    use serde::{Deserialize, Deserializer, de};

    macro_rules! named {
        ($($field:ident),*) => {$(
            pub fn $field<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
                d: D,
            ) -> Result<T, D::Error> {
                T::deserialize(d)
                    .map_err(|e| de::Error::custom(format_args!("{}: {e}", stringify!($field))))
            }
        )*};
    }

    named!(
        workloads,
        params,
        runs,
        max_runs,
        backend,
        config_fragment,
        machine,
        pool
    );
}

/// The Kconfig line that aligns every kernel function to 64 bytes (x86-64,
/// arm64, powerpc, arc; since 5.10): a commit then moves the addresses of
/// its own functions only, not those of every function linked after them.
pub const ALIGN_FUNCTIONS_LINE: &str = "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y";

/// Whether a Kconfig fragment forces function alignment.
pub fn aligns_functions(fragment: Option<&str>) -> bool {
    fragment.is_some_and(|f| f.lines().any(|l| l.trim() == ALIGN_FUNCTIONS_LINE))
}

/// Refuses every field that reaches it. Flattened last into a struct, it
/// gets the fields the struct's own did not take: there are none in a sound
/// request, and the first of any other is an error naming it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoOtherFields;

impl<'de> Deserialize<'de> for NoOtherFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Refuse;

        impl<'de> Visitor<'de> for Refuse {
            type Value = NoOtherFields;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no other field")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoOtherFields, A::Error> {
                match map.next_key::<String>()? {
                    None => Ok(NoOtherFields),
                    Some(key) => Err(de::Error::unknown_field(&key, &[])),
                }
            }
        }

        deserializer.deserialize_map(Refuse)
    }
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

fn invalid<T>(message: String) -> Result<T, Error> {
    Err(Error::InvalidSubmission(message))
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

    fn setup() -> Setup {
        Setup::new(
            vec!["open1".into()],
            AskedParams {
                mode: TaskMode::Process,
                nr_task: vec![NrTask::Count(1)],
                seconds: None,
                warmup_seconds: None,
                perf_stat: false,
                perf_profile: false,
            },
            3,
        )
    }

    #[test]
    fn kconfig_lines_are_added_on_lines_of_their_own() {
        let mut s = setup();
        s.add_kconfig("CONFIG_HZ_1000=y");
        assert_eq!(s.config_fragment.as_deref(), Some("CONFIG_HZ_1000=y"));
        s.add_kconfig("CONFIG_DEBUG_INFO=y\n");
        assert_eq!(
            s.config_fragment.as_deref(),
            Some("CONFIG_HZ_1000=y\nCONFIG_DEBUG_INFO=y\n")
        );
        assert!(!s.aligns_functions());
        s.add_kconfig("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y\n");
        assert!(s.aligns_functions());
    }

    /// A row keeps its setup as this JSON (`comparisons.setup`), written
    /// by the server or, for a row the release before inserted, by the
    /// database from the columns it wrote (`setup_from_columns`, with the
    /// parameters it resolved): both read back.
    #[test]
    fn the_stored_forms_read_back() {
        let mut whole = setup();
        whole.max_runs = Some(12);
        whole.backend = Some(MeasurementMode::TcgIcount);
        whole.pool = Some("icx".into());
        whole.add_kconfig("CONFIG_HZ_1000=y\n");
        let stored = serde_json::to_value(&whole).unwrap();
        assert_eq!(serde_json::from_value::<Setup>(stored).unwrap(), whole);
        let from_columns = serde_json::json!({
            "workloads": ["open1", "dup1"], "runs": 5, "max_runs": 20,
            "backend": "tcg-icount", "config_fragment": "CONFIG_HZ_1000=y\n",
            "params": {"mode": "thread", "nr_task": [1, 2], "seconds": 1,
                       "warmup_seconds": 1, "perf_stat": true, "perf_profile": false},
        });
        let read: Setup = serde_json::from_value(from_columns).unwrap();
        assert_eq!(read.workloads, ["open1", "dup1"]);
        assert_eq!((read.runs, read.max_runs), (5, Some(20)));
        assert_eq!(read.params.seconds, Some(1));
        assert_eq!(read.backend, Some(MeasurementMode::TcgIcount));
        assert!(read.pool.is_none() && read.machine.is_none());
    }

    /// Flattened into a request, the setup takes its fields, the request
    /// its own, and a field neither knows is refused by name.
    #[test]
    fn flattened_it_refuses_an_unknown_field_by_name() {
        #[derive(Debug, Deserialize, Serialize, PartialEq)]
        struct Request {
            name: String,
            #[serde(flatten)]
            setup: Setup,
        }
        let wire = serde_json::json!({
            "name": "x", "workloads": ["open1"], "runs": 3,
            "params": {"mode": "process", "nr_task": [1], "perf_stat": false, "perf_profile": false},
        });
        let read: Request = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(read.setup, setup());
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            wire,
            "the same flat form back"
        );
        let mut odd = wire.clone();
        odd["colour"] = "red".into();
        let e = serde_json::from_value::<Request>(odd).unwrap_err();
        assert!(e.to_string().contains("unknown field `colour`"), "{e}");
        let mut inner = wire;
        inner["params"]["secnods"] = 9.into();
        let e = serde_json::from_value::<Request>(inner).unwrap_err();
        assert!(e.to_string().contains("unknown field `secnods`"), "{e}");
        // A field that cannot be read is named, as the body reader's path
        // named it before the fields were flattened.
        let mut bad = serde_json::to_value(&read).unwrap();
        bad["params"]["nr_task"] = serde_json::json!(["150%"]);
        let e = serde_json::from_value::<Request>(bad).unwrap_err();
        assert!(e.to_string().starts_with("params: "), "{e}");
        let mut bad = serde_json::to_value(&read).unwrap();
        bad["runs"] = "three".into();
        let e = serde_json::from_value::<Request>(bad).unwrap_err();
        assert!(e.to_string().starts_with("runs: "), "{e}");
        // On its own (as a tree stores it) too.
        let e = serde_json::from_value::<Setup>(serde_json::json!({
            "params": {"nr_task": [1]}, "runs": 3, "nr_task": [2],
        }))
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `nr_task`"), "{e}");
    }

    #[test]
    fn each_field_is_checked_naming_it() {
        assert!(setup().check().is_ok());
        let mut s = setup();
        s.workloads = vec!["open9".into()];
        assert!(
            s.check()
                .unwrap_err()
                .to_string()
                .contains("unknown workload `open9`")
        );
        let mut s = setup();
        s.config_fragment = Some("rm -rf /".into());
        assert!(
            s.check()
                .unwrap_err()
                .to_string()
                .contains("config_fragment line")
        );
        let mut s = setup();
        s.machine = Some("a".into());
        s.pool = Some("b".into());
        assert!(s.check().unwrap_err().to_string().contains("not both"));
        let mut s = setup();
        s.workloads.clear();
        assert!(s.check().is_ok(), "none named: the map's");
    }
}
