//! The runner protocol: JSON bodies exchanged between `runner agent` and the
//! server's `/api/v1/runner/…` and `/api/v1/jobs/…` endpoints. Both sides
//! (de)serialize these exact types, so the protocol has one definition.
//! It stays one file (~640 lines) so that whoever implements a runner reads
//! the whole wire contract top to bottom, in the order the calls happen,
//! starting with its version ([`PROTOCOL_VERSION`]) and the rule by which
//! the two sides refuse each other across versions.

use serde::{Deserialize, Serialize};

use crate::machine_state::MachineState;
use crate::run::{MeasurementMode, RunResult, Side, TaskMode};
use crate::run_length::{self, Asker};

/// The version of this protocol this build speaks. It changes only when a
/// change is one the other side cannot ignore (a field it must read, a
/// meaning that changed); added optional fields and headers keep it. Runners
/// and servers from before the version was sent spoke version 1, so an
/// absent version reads as 1.
pub const PROTOCOL_VERSION: u32 = 1;

/// The oldest version a server of this build still serves, so that a fleet
/// is upgraded server first and then one runner at a time: while runners of
/// the older version remain, the server speaks both.
pub const OLDEST_PROTOCOL_VERSION: u32 = 1;

/// Header carrying the caller's [`PROTOCOL_VERSION`] on every runner call,
/// so a runner that registered before its server was replaced is still
/// checked at its next claim.
pub const PROTOCOL_HEADER: &str = "patchperf-protocol";

/// Header of a claim's `204 No Content` when the machine may not claim:
/// its [`MachineState`], whose [`MachineState::explain`] the runner logs.
/// A runner that does not know it just sees no job, as before.
pub const MACHINE_STATE_HEADER: &str = "patchperf-machine-state";

/// What a message without a version spoke: the protocol before versions
/// were sent.
fn version_one() -> u32 {
    1
}

/// `1` or `1–2`: the versions a server speaks, in words.
fn versions(oldest: u32, newest: u32) -> String {
    if oldest == newest {
        format!("version {newest}")
    } else {
        format!("versions {oldest}–{newest}")
    }
}

/// Why a server of this build refuses a runner speaking `runner`, naming
/// both versions and what to upgrade; `None` when it serves it.
pub fn runner_refused(runner: u32) -> Option<String> {
    let ours = versions(OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION);
    if runner > PROTOCOL_VERSION {
        Some(format!(
            "this runner speaks patchperf protocol version {runner}, newer than this server \
             knows (it speaks {ours}); upgrade the server first, then the runners"
        ))
    } else if runner < OLDEST_PROTOCOL_VERSION {
        Some(format!(
            "this runner speaks patchperf protocol version {runner}, which this server no \
             longer speaks (it speaks {ours}); upgrade the runner"
        ))
    } else {
        None
    }
}

/// Why a runner of this build refuses a server speaking `oldest`–`newest`
/// (from [`RegisterResponse`]), naming both versions and what to upgrade;
/// `None` when it speaks [`PROTOCOL_VERSION`].
pub fn server_refused(oldest: u32, newest: u32) -> Option<String> {
    let theirs = versions(oldest, newest);
    if PROTOCOL_VERSION > newest {
        Some(format!(
            "the server speaks patchperf protocol {theirs}, older than this runner's version \
             {PROTOCOL_VERSION}; upgrade the server first (a fleet is upgraded server first, \
             then one runner at a time), or run a runner that speaks {theirs}"
        ))
    } else if PROTOCOL_VERSION < oldest {
        Some(format!(
            "the server speaks patchperf protocol {theirs} and no longer this runner's \
             version {PROTOCOL_VERSION}; upgrade this runner"
        ))
    } else {
        None
    }
}

/// Hardware and software inventory of a runner host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MachineInventory {
    /// Host name.
    pub hostname: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub nr_cpu: u32,
    /// MemTotal in bytes.
    pub memory_bytes: u64,
    /// `uname -r` of the host.
    pub kernel_release: String,
    /// `uname -m`.
    pub arch: String,
    /// Whether KVM guests run at hardware speed here (judged by a probe
    /// boot, not by `/dev/kvm` existing).
    pub kvm_usable: bool,
    /// Whether hardware PMU events (cycles, instructions) can be counted.
    pub pmu_usable: bool,
    /// Boot backends this runner can use, best first.
    pub backends: Vec<MeasurementMode>,
    /// Free-form facts worth showing on the machine page.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// `POST /api/v1/runner/register`: create or update this runner's machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterRequest {
    /// Stable machine name chosen by the operator (defaults to the hostname).
    pub name: String,
    /// What the machine is.
    pub inventory: MachineInventory,
    /// The [`PROTOCOL_VERSION`] the runner speaks; absent from runners
    /// older than the field, which spoke version 1.
    #[serde(default = "version_one")]
    pub protocol_version: u32,
}

/// Header that names the calling machine (its id from [`RegisterResponse`])
/// on every job-scoped call: heartbeat, state, runs, finish.
pub const MACHINE_HEADER: &str = "patchperf-machine";

/// Header that names the attempt ([`JobSpec::attempt`]) the caller holds on
/// every job-scoped call; a call from an attempt whose lease ran out is
/// refused even when the same machine claimed the job again.
pub const ATTEMPT_HEADER: &str = "patchperf-attempt";

/// Answer to [`RegisterRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterResponse {
    /// The machine's id, to quote in claims.
    pub machine_id: i64,
    /// The newest protocol version the server speaks; absent from servers
    /// older than the field, which spoke version 1 only.
    #[serde(default = "version_one")]
    pub protocol_version: u32,
    /// The oldest protocol version the server speaks (absent: 1).
    #[serde(default = "version_one")]
    pub oldest_protocol_version: u32,
    /// What an admin has said about the machine (absent: active).
    #[serde(default)]
    pub state: MachineState,
}

/// `POST /api/v1/jobs/claim`: long-poll for work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClaimRequest {
    /// The registered machine asking.
    pub machine_id: i64,
    /// How long the server may hold the request open when no job is ready
    /// (capped by the server at about 30 s).
    pub wait_seconds: u32,
}

/// Where the base tree comes from. A field the variant does not have is
/// refused, so that a misspelt or misplaced one (`commit` on a tarball) is
/// not silently ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum BaseSource {
    /// A git repository and a commit (id or ref) in it.
    Git {
        /// Clone URL.
        url: String,
        /// Commit id, tag or branch.
        commit: String,
    },
    /// A source tarball the runner knows by name, e.g. `linux-source-6.1`
    /// (Debian's `/usr/src/linux-source-6.1.tar.xz`).
    Tarball {
        /// Name of the tarball.
        name: String,
    },
}

impl BaseSource {
    /// The same base as anyone may read it: a git URL without credentials.
    #[must_use]
    pub fn without_credentials(&self) -> BaseSource {
        match self {
            BaseSource::Git { url, commit } => BaseSource::Git {
                url: crate::credentials::without_credentials(url),
                commit: commit.clone(),
            },
            BaseSource::Tarball { .. } => self.clone(),
        }
    }

    /// Short human form: `linux-source-6.1` or `<url>@<commit>`, the URL
    /// without credentials ([`without_credentials`](crate::credentials::without_credentials)):
    /// what pages, reports and logs show.
    pub fn describe(&self) -> String {
        match self {
            BaseSource::Git { url, commit } => {
                format!("{}@{commit}", crate::credentials::without_credentials(url))
            }
            BaseSource::Tarball { name } => name.clone(),
        }
    }
}

/// nr_task as 0-day writes it: a number of tasks or a share of online CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NrTask {
    /// That many tasks.
    Count(u32),
    /// `"100%"`, `"50%"`: a percentage of online CPUs (at least one task).
    #[serde(with = "percent")]
    Percent(u32),
}

impl NrTask {
    /// Resolves to a task count on a machine with `nr_cpu` online CPUs.
    pub fn resolve(self, nr_cpu: u32) -> u32 {
        match self {
            NrTask::Count(n) => n,
            NrTask::Percent(p) => (nr_cpu.saturating_mul(p) / 100).max(1),
        }
    }
}

impl std::fmt::Display for NrTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NrTask::Count(n) => write!(f, "{n}"),
            NrTask::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl std::str::FromStr for NrTask {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let p: u32 = p
                .parse()
                .map_err(|_| format!("nr_task {s:?}: not a percentage"))?;
            if p == 0 || p > 100 {
                return Err(format!("nr_task {s:?}: percentage must be 1–100%"));
            }
            Ok(NrTask::Percent(p))
        } else {
            let n: u32 = s
                .parse()
                .map_err(|_| format!("nr_task {s:?}: not a number of tasks"))?;
            if n == 0 {
                return Err("nr_task must be at least 1".to_string());
            }
            Ok(NrTask::Count(n))
        }
    }
}

mod percent {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(p: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{p}%"))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let s = String::deserialize(d)?;
        match s.parse::<super::NrTask>() {
            Ok(super::NrTask::Percent(p)) => Ok(p),
            Ok(super::NrTask::Count(_)) => Err(serde::de::Error::custom(
                "expected a percentage such as \"100%\"",
            )),
            Err(e) => Err(serde::de::Error::custom(e)),
        }
    }
}

/// Workload parameters of a comparison (0-day's `parameters:` block). An
/// unknown field is refused, as it is at the top of a submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkloadParams {
    /// Processes or threads.
    #[serde(default)]
    pub mode: TaskMode,
    /// One or more task counts; each is its own report.
    pub nr_task: Vec<NrTask>,
    /// Measured seconds per run.
    pub seconds: u32,
    /// Warm-up seconds per run, dropped.
    pub warmup_seconds: u32,
    /// Collect `perf stat` metrics.
    #[serde(default)]
    pub perf_stat: bool,
    /// Collect `perf-profile.*` metrics.
    #[serde(default)]
    pub perf_profile: bool,
}

/// What a comparison measures when it says nothing: one process, 5
/// measured seconds after 2 of warm-up, no perf. A bisection without
/// `params`, a runner job file's `[params]` and `submit`/`track`'s options
/// all start here. (`bench` on its own and a followed list have lengths
/// of their own: every default is in [`run_length`]'s one table.)
impl Default for WorkloadParams {
    fn default() -> Self {
        WorkloadParams {
            mode: TaskMode::Process,
            nr_task: vec![NrTask::Count(1)],
            seconds: COMPARISON.seconds,
            warmup_seconds: COMPARISON.warmup_seconds,
            perf_stat: false,
            perf_profile: false,
        }
    }
}

/// How long each run of a comparison measures, when its submission leaves
/// it to the measurement mode: [`run_length::default_for`]'s table (1 s
/// after 1 s under `tcg-icount`, 5 s after 2 s on wall clock).
pub fn run_length_of(mode: MeasurementMode) -> (u32, u32) {
    let l = run_length::default_for(Asker::Comparison, Some(mode));
    (l.seconds, l.warmup_seconds)
}

/// A comparison's run length while its mode is not known.
const COMPARISON: run_length::RunLength = run_length::default_for(Asker::Comparison, None);

/// One boot a job must perform, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BootSlot {
    /// Position of this boot in the comparison's whole boot order (0-based).
    pub seq: u32,
    /// Which kernel to boot.
    pub side: Side,
}

/// A claimed job: everything the runner needs to execute it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobSpec {
    /// Job id, for heartbeats, state changes, uploads and finishing.
    pub job_id: i64,
    /// The comparison the job belongs to.
    pub comparison_id: i64,
    /// 1 on the first claim, 2 after one lease ran out, …
    pub attempt: u32,
    /// Seconds the lease lasts unless extended by a heartbeat.
    pub lease_seconds: u32,
    /// Base tree.
    pub base: BaseSource,
    /// The patch series as mbox text (empty for an A/A job).
    pub mbox: String,
    /// An A/A job: the "patched" boots boot the base kernel too, so the two
    /// sides differ only by chance (the machine's noise floor).
    #[serde(default)]
    pub aa: bool,
    /// sha256 of `mbox`, part of the patched kernel's identity.
    pub patches_sha256: String,
    /// Patches the base kernel carries, as mbox text: empty for the pristine
    /// source; for a step of a per-patch comparison, patches 1..k-1 of the
    /// series, while `mbox` holds patches 1..k.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_mbox: String,
    /// sha256 of `base_mbox` (empty with it), part of the base kernel's
    /// identity.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_patches_sha256: String,
    /// Extra Kconfig lines applied on top of the benchmark config (both sides).
    #[serde(default)]
    pub config_fragment: Option<String>,
    /// Workloads to run in each boot, in this order.
    pub workloads: Vec<String>,
    /// Their parameters.
    pub params: WorkloadParams,
    /// Boot backend requested, or `None` to let the runner pick its best.
    #[serde(default)]
    pub backend: Option<MeasurementMode>,
    /// The boots of this job, in the order to perform them.
    pub boots: Vec<BootSlot>,
}

/// States a job passes through, as shown on the comparison page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for a runner.
    Queued,
    /// Claimed, nothing reported yet.
    Claimed,
    /// Getting the base tree.
    Fetching,
    /// Applying the patch series.
    Applying,
    /// Building kernels.
    Building,
    /// Booting a kernel.
    Booting,
    /// Running workloads in a booted kernel.
    Running,
    /// Sending results.
    Uploading,
    /// Finished with results.
    Done,
    /// Finished without (all) results; see the reason.
    Failed,
}

impl JobState {
    /// Every state, in the order a job goes through them.
    pub const ALL: &'static [JobState] = &[
        JobState::Queued,
        JobState::Claimed,
        JobState::Fetching,
        JobState::Applying,
        JobState::Building,
        JobState::Booting,
        JobState::Running,
        JobState::Uploading,
        JobState::Done,
        JobState::Failed,
    ];

    /// States in which a machine holds the job's lease: all between the
    /// first (queued) and the two final ones.
    pub const LEASED: &'static [JobState] = match Self::ALL {
        [_queued, leased @ .., _done, _failed] => leased,
        _ => &[],
    };

    /// Lower-case name as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Claimed => "claimed",
            JobState::Fetching => "fetching",
            JobState::Applying => "applying",
            JobState::Building => "building",
            JobState::Booting => "booting",
            JobState::Running => "running",
            JobState::Uploading => "uploading",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }

    /// Parses [`JobState::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|state| state.as_str() == s)
    }

    /// Done or failed: no runner holds the job any more.
    pub fn is_final(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed)
    }

    /// Whether a machine holds the job's lease in this state.
    pub fn is_leased(self) -> bool {
        Self::LEASED.contains(&self)
    }

    /// Whether a runner reports this state while it works on a job (every
    /// leased state but `claimed`, which only the claim sets).
    pub fn is_progress(self) -> bool {
        self.is_leased() && self != JobState::Claimed
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "sqlx")]
text_column!(JobState, as_str, parse);

/// `POST /api/v1/jobs/{id}/heartbeat` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeartbeatResponse {
    /// Seconds the lease now lasts.
    pub lease_seconds: u32,
    /// The comparison was cancelled: stop and finish as failed.
    #[serde(default)]
    pub cancelled: bool,
}

/// `POST /api/v1/jobs/{id}/state`: progress with the end of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StateUpdate {
    /// New state (one of the in-progress states).
    pub state: JobState,
    /// One line saying what is happening ("building patched kernel").
    #[serde(default)]
    pub message: String,
    /// The last lines of the step's output.
    #[serde(default)]
    pub log_tail: String,
}

/// `POST /api/v1/jobs/{id}/runs`: the result of one run of one boot.
/// Uploading the same (boot, workload, nr_task) twice stores it once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunUpload {
    /// Which boot of the comparison the run happened in.
    pub boot: BootSlot,
    /// The run.
    pub result: RunResult,
}

/// Answer to [`RunUpload`]: `201 Created` with `stored: true` the first
/// time, `200 OK` with `stored: false` when the run was stored before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunUploadResponse {
    /// The stored run's id.
    pub run_id: i64,
    /// Whether this upload stored it (false: it was already there).
    pub stored: bool,
}

/// Why a job failed, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FailureReason {
    /// `git am` / `patch -p1` rejected the series.
    PatchDoesNotApply,
    /// The base tree could not be fetched.
    FetchFailed,
    /// `make` failed.
    BuildFailed,
    /// The kernel did not come up (no init, no console output).
    BootFailed,
    /// The console showed a kernel panic.
    KernelPanic,
    /// A boot or run time limit passed.
    Timeout,
    /// The guest finished but wrote no results.
    NoResults,
    /// This runner cannot execute such a job.
    Unsupported,
    /// The comparison was cancelled.
    Cancelled,
    /// The lease ran out too many times.
    LeaseExpired,
    /// Anything else; see the detail.
    Other,
}

impl FailureReason {
    /// Every reason, for tables and validation.
    pub const ALL: &'static [FailureReason] = &[
        FailureReason::PatchDoesNotApply,
        FailureReason::FetchFailed,
        FailureReason::BuildFailed,
        FailureReason::BootFailed,
        FailureReason::KernelPanic,
        FailureReason::Timeout,
        FailureReason::NoResults,
        FailureReason::Unsupported,
        FailureReason::Cancelled,
        FailureReason::LeaseExpired,
        FailureReason::Other,
    ];

    /// The wire and storage spelling: `patch-does-not-apply`.
    pub fn code(self) -> &'static str {
        match self {
            FailureReason::PatchDoesNotApply => "patch-does-not-apply",
            FailureReason::FetchFailed => "fetch-failed",
            FailureReason::BuildFailed => "build-failed",
            FailureReason::BootFailed => "boot-failed",
            FailureReason::KernelPanic => "kernel-panic",
            FailureReason::Timeout => "timeout",
            FailureReason::NoResults => "no-results",
            FailureReason::Unsupported => "unsupported",
            FailureReason::Cancelled => "cancelled",
            FailureReason::LeaseExpired => "lease-expired",
            FailureReason::Other => "other",
        }
    }

    /// Parses [`FailureReason::code`]'s output.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.code() == code)
    }

    /// The reason in words, as shown on reports: `patch does not apply`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::PatchDoesNotApply => "patch does not apply",
            FailureReason::FetchFailed => "fetch failed",
            FailureReason::BuildFailed => "build failed",
            FailureReason::BootFailed => "boot failed",
            FailureReason::KernelPanic => "kernel panic",
            FailureReason::Timeout => "timeout",
            FailureReason::NoResults => "no results",
            FailureReason::Unsupported => "runner cannot execute this job",
            FailureReason::Cancelled => "cancelled",
            FailureReason::LeaseExpired => "lease expired too often",
            FailureReason::Other => "other",
        }
    }
}

#[cfg(feature = "sqlx")]
text_column!(FailureReason, code, from_code);

/// `POST /api/v1/jobs/{id}/finish`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum FinishRequest {
    /// Every boot and run done and uploaded.
    Done {
        /// Final lines of the log.
        #[serde(default)]
        log_tail: String,
    },
    /// The job could not complete.
    Failed {
        /// Why, in a class the report can name.
        reason: FailureReason,
        /// The specifics (failing hunk, panic text, …).
        detail: String,
        /// Final lines of the log.
        #[serde(default)]
        log_tail: String,
    },
}

/// Error body of every 4xx/5xx JSON answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// What went wrong, in words the caller can act on.
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runners_report_the_leased_states_but_claimed() {
        let all = [
            "queued",
            "claimed",
            "fetching",
            "applying",
            "building",
            "booting",
            "running",
            "uploading",
            "done",
            "failed",
        ];
        let progress: Vec<&str> = all
            .iter()
            .filter_map(|s| JobState::parse(s))
            .filter(|s| s.is_progress())
            .map(JobState::as_str)
            .collect();
        assert_eq!(
            progress,
            [
                "fetching",
                "applying",
                "building",
                "booting",
                "running",
                "uploading"
            ]
        );
        assert!(JobState::Claimed.is_leased() && !JobState::Queued.is_leased());
        assert!(JobState::LEASED.iter().all(|s| !s.is_final()));
        // ALL is every state the database allows, once each, in order.
        let listed: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(listed, all);
    }

    #[test]
    fn nr_task_reads_counts_and_percentages_like_0day() {
        assert_eq!("4".parse::<NrTask>(), Ok(NrTask::Count(4)));
        assert_eq!("100%".parse::<NrTask>(), Ok(NrTask::Percent(100)));
        assert!("0".parse::<NrTask>().is_err());
        assert!("150%".parse::<NrTask>().is_err());
        assert_eq!(NrTask::Percent(100).resolve(256), 256);
        assert_eq!(NrTask::Percent(50).resolve(2), 1);
        assert_eq!(NrTask::Percent(50).resolve(1), 1);
    }

    #[test]
    fn nr_task_round_trips_through_json() {
        let v: Vec<NrTask> = serde_json::from_str(r#"[1, "50%", 8]"#).unwrap();
        assert_eq!(v, [NrTask::Count(1), NrTask::Percent(50), NrTask::Count(8)]);
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"[1,"50%",8]"#);
    }

    #[test]
    fn base_and_params_refuse_fields_they_do_not_have() {
        let base: BaseSource =
            serde_json::from_str(r#"{"kind":"git","url":"/srv/linux.git","commit":"v6.1"}"#)
                .unwrap();
        assert_eq!(serde_json::to_value(&base).unwrap()["kind"], "git");
        for (json, field) in [
            (
                r#"{"kind":"tarball","name":"linux-source-6.1","commit":"v6.1"}"#,
                "commit",
            ),
            (
                r#"{"kind":"git","url":"/srv/linux.git","commit":"v6.1","branch":"x"}"#,
                "branch",
            ),
        ] {
            let e = serde_json::from_str::<BaseSource>(json).unwrap_err();
            assert!(
                e.to_string().contains(&format!("unknown field `{field}`")),
                "{e}"
            );
        }
        let e = serde_json::from_str::<WorkloadParams>(
            r#"{"nr_task":[1],"seconds":5,"warmup_seconds":1,"perf_sta":true}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `perf_sta`"), "{e}");
    }

    #[test]
    fn failure_reason_codes_are_the_serde_spelling() {
        for &reason in FailureReason::ALL {
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                serde_json::Value::String(reason.code().to_string())
            );
            assert_eq!(FailureReason::from_code(reason.code()), Some(reason));
        }
    }

    #[test]
    fn a_version_absent_from_either_side_is_version_one() {
        let req: RegisterRequest = serde_json::from_value(serde_json::json!({
            "name": "lab-1",
            "inventory": {
                "hostname": "lab-1", "cpu_model": "x", "nr_cpu": 1, "memory_bytes": 1,
                "kernel_release": "6.1", "arch": "x86_64", "kvm_usable": false,
                "pmu_usable": false, "backends": ["tcg-icount"]
            }
        }))
        .unwrap();
        assert_eq!(req.protocol_version, 1);
        let resp: RegisterResponse =
            serde_json::from_value(serde_json::json!({ "machine_id": 7 })).unwrap();
        assert_eq!(
            (
                resp.protocol_version,
                resp.oldest_protocol_version,
                resp.state
            ),
            (1, 1, MachineState::Active)
        );
    }

    #[test]
    fn versions_meet_when_the_server_speaks_the_runners_and_say_what_to_upgrade() {
        assert_eq!(runner_refused(PROTOCOL_VERSION), None);
        assert_eq!(
            server_refused(OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION),
            None
        );
        let newer = PROTOCOL_VERSION + 1;
        let e = runner_refused(newer).unwrap();
        assert!(e.contains(&format!("version {newer}")), "{e}");
        assert!(e.contains("upgrade the server first"), "{e}");
        let e = runner_refused(0).unwrap();
        assert!(e.contains("upgrade the runner"), "{e}");
        // A server that speaks only newer versions, or only older ones.
        let e = server_refused(newer, newer + 1).unwrap();
        assert!(
            e.contains(&format!("versions {newer}–{}", newer + 1)),
            "{e}"
        );
        assert!(e.contains("upgrade this runner"), "{e}");
        let e = server_refused(0, 0).unwrap();
        assert!(e.contains("version 0"), "{e}");
        assert!(e.contains("upgrade the server first"), "{e}");
    }

    #[test]
    fn finish_request_is_tagged_by_outcome() {
        let f: FinishRequest = serde_json::from_str(
            r#"{"outcome":"failed","reason":"patch-does-not-apply","detail":"fs/open.c hunk 2"}"#,
        )
        .unwrap();
        assert_eq!(
            f,
            FinishRequest::Failed {
                reason: FailureReason::PatchDoesNotApply,
                detail: "fs/open.c hunk 2".into(),
                log_tail: String::new()
            }
        );
    }
}
