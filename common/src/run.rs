//! What one run produces: one workload executed once (with one nr_task) on
//! one booted kernel. This is the unit the runner writes to `--json`, keeps
//! in a local results directory and uploads; the server stores it as is.

use serde::{Deserialize, Serialize};

/// Processes (will-it-scale's default) or threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TaskMode {
    /// Each task is a forked process.
    #[default]
    Process,
    /// Each task is a thread of one process.
    Thread,
}

impl TaskMode {
    /// `process` / `thread`, as in 0-day's `mode:` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskMode::Process => "process",
            TaskMode::Thread => "thread",
        }
    }

    /// `processes` / `threads`, as in `will-it-scale.<N>.processes`.
    pub fn plural(self) -> &'static str {
        match self {
            TaskMode::Process => "processes",
            TaskMode::Thread => "threads",
        }
    }
}

/// The two sides of a comparison (base sorts first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The kernel without the patch series.
    Base,
    /// The kernel with the patch series applied.
    Patched,
}

impl Side {
    /// `base` / `patched`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Patched => "patched",
        }
    }

    /// The letter of boot orders and job lines: `A` for base, `B` for
    /// patched (`ABBA`).
    pub fn letter(self) -> char {
        match self {
            Side::Base => 'A',
            Side::Patched => 'B',
        }
    }

    /// Parses [`Side::as_str`]'s output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "base" => Some(Side::Base),
            "patched" => Some(Side::Patched),
            _ => None,
        }
    }
}

#[cfg(feature = "sqlx")]
text_column!(Side, as_str, parse);

/// How the numbers were measured; reports must say which, because the modes
/// measure different things.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum MeasurementMode {
    /// Directly on the host's running kernel (`runner bench`).
    Host,
    /// QEMU with KVM: wall-clock time at hardware speed.
    Kvm,
    /// QEMU TCG, wall clock: slow and noisy, for functional checks.
    Tcg,
    /// QEMU TCG with `-icount shift=0,sleep=off`: guest time follows the
    /// instruction count, so ops/s measures path length, deterministically.
    TcgIcount,
    /// Bare metal, booted with kexec.
    Kexec,
}

impl MeasurementMode {
    /// `host`, `kvm`, `tcg`, `tcg-icount`, `kexec`.
    pub fn as_str(self) -> &'static str {
        match self {
            MeasurementMode::Host => "host",
            MeasurementMode::Kvm => "kvm",
            MeasurementMode::Tcg => "tcg",
            MeasurementMode::TcgIcount => "tcg-icount",
            MeasurementMode::Kexec => "kexec",
        }
    }

    /// One sentence a report can print under its header.
    pub fn explanation(self) -> &'static str {
        match self {
            MeasurementMode::Host => "measured on the host's running kernel (wall clock)",
            MeasurementMode::Kvm => "measured in QEMU/KVM guests at hardware speed (wall clock)",
            MeasurementMode::Tcg => {
                "measured in QEMU TCG guests (emulated, wall clock: noisy, functional check only)"
            }
            MeasurementMode::TcgIcount => {
                "measured in QEMU TCG guests with -icount shift=0: guest time counts instructions, \
                 so ops/s reflects path length, not cycles, cache misses or atomics"
            }
            MeasurementMode::Kexec => "measured on bare metal booted with kexec (wall clock)",
        }
    }
}

/// Identifies a built kernel, so a report can prove which kernel produced
/// each number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KernelIdentity {
    /// `uname -r` inside the booted kernel.
    pub release: String,
    /// The source: a git commit id, or the tarball name and its sha256.
    pub source: String,
    /// sha256 of the applied patch series (mbox), absent for the base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches_sha256: Option<String>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// `gcc --version` first line (or clang's).
    pub compiler: String,
    /// `uname -v` inside the booted kernel (build number and date).
    #[serde(default)]
    pub version: String,
}

/// One value per measured second; `name` is a metric name from
/// [`crate::metric`] (for example `will-it-scale.2.processes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Series {
    /// Metric name the points are samples of.
    pub name: String,
    /// Seconds between points (1 for will-it-scale and perf-stat intervals).
    pub interval_seconds: f64,
    /// The samples, in time order.
    pub points: Vec<f64>,
}

/// One named value of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetricValue {
    /// Metric name from [`crate::metric`].
    pub name: String,
    /// The value; never a stand-in for "could not be counted" (see
    /// [`RunResult::unsupported`]).
    pub value: f64,
}

/// A will-it-scale sample for one second: ops of all tasks together and the
/// slowest and fastest task, as will-it-scale prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecondSample {
    /// Sum of the tasks' ops in that second.
    pub total: u64,
    /// Ops of the slowest task.
    pub min: u64,
    /// Ops of the fastest task.
    pub max: u64,
}

/// Everything one run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunResult {
    /// Workload name (see [`crate::workload::WORKLOADS`]).
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Number of tasks.
    pub nr_task: u32,
    /// Warm-up seconds run and dropped.
    pub warmup_seconds: u32,
    /// Measured seconds.
    pub seconds: u32,
    /// How the numbers were measured.
    pub measurement: MeasurementMode,
    /// The kernel the run happened on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelIdentity>,
    /// will-it-scale's per-second lines, measured seconds only.
    pub samples: Vec<SecondSample>,
    /// Scalar metrics, including `will-it-scale.*`, `perf-stat.*`,
    /// `perf-profile.*` and `kernel.*`.
    pub metrics: Vec<MetricValue>,
    /// Per-second series (will-it-scale ops and perf-stat intervals).
    #[serde(default)]
    pub series: Vec<Series>,
    /// Metrics (or perf events) that this machine could not count: shown as
    /// unsupported, never as zero.
    #[serde(default)]
    pub unsupported: Vec<String>,
    /// The event perf sampled for `perf-profile.*` (`cycles` or `cpu-clock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_event: Option<String>,
    /// Warnings worth showing beside the numbers (e.g. perf not available).
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl RunResult {
    /// The value of a metric, if this run has it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}
