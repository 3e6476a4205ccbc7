//! What one run produces: one workload executed once (with one nr_task) on
//! one booted kernel. This is the unit the runner writes to `--json`, keeps
//! in a local results directory and uploads; the server stores it as is.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

pub use crate::workload::TaskMode;

use crate::Error;
use crate::limits::{
    MAX_METRICS, MAX_NR_TASK, MAX_SAMPLES, MAX_SECONDS, MAX_SERIES, MAX_SERIES_POINTS,
    MAX_WARMUP_SECONDS, max_value,
};

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
    /// Every mode.
    pub const ALL: [MeasurementMode; 5] = [
        MeasurementMode::Host,
        MeasurementMode::Kvm,
        MeasurementMode::Tcg,
        MeasurementMode::TcgIcount,
        MeasurementMode::Kexec,
    ];

    /// The mode [`MeasurementMode::as_str`] spells `s`, as stored and as
    /// the API and command line write it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

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
                 so ops/s reflects path length, not cycles, cache misses or atomics; the guest has \
                 one CPU, so nr_task > 1 tasks take turns on it and contention between CPUs \
                 (locks, shared cache lines) is not measured"
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
    /// How many patches of the series it carries (patches 1..n), absent
    /// for the pristine source; a step of a per-patch comparison boots
    /// kernels with patches on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<u32>,
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

    /// Checks that every number of the run is one a real run can produce
    /// (within [`crate::limits`]), that metric and series names are given
    /// once each, and that a run has metrics. The message names the field
    /// or metric and the allowed range.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidRun(m));
        for (field, value, max) in [
            ("seconds", self.seconds, MAX_SECONDS),
            ("warmup_seconds", self.warmup_seconds, MAX_WARMUP_SECONDS),
            ("nr_task", self.nr_task, MAX_NR_TASK),
        ] {
            if value > max {
                return bad(format!("{field} is {value}; at most {max}"));
            }
        }
        if self.nr_task == 0 {
            return bad("nr_task is 0; a run has at least one task".into());
        }
        for (what, count, max) in [
            ("samples", self.samples.len(), MAX_SAMPLES),
            ("metrics", self.metrics.len(), MAX_METRICS),
            ("series", self.series.len(), MAX_SERIES),
            ("unsupported metrics", self.unsupported.len(), MAX_METRICS),
        ] {
            if count > max {
                return bad(format!("run has {count} {what}; at most {max}"));
            }
        }
        let mut names = HashSet::new();
        for m in &self.metrics {
            if m.name.trim().is_empty() {
                return bad("a metric has an empty name".into());
            }
            if !m.value.is_finite() {
                return bad(format!(
                    "metric `{}` is {} ; record metrics that could not be counted under \
                     `unsupported` instead",
                    m.name, m.value
                ));
            }
            let max = max_value(&m.name);
            if m.value.abs() > max {
                return bad(format!(
                    "metric `{}` is {:e}; no counter or rate gets beyond ±{max:e}",
                    m.name, m.value
                ));
            }
            if !names.insert(m.name.as_str()) {
                return bad(format!("metric `{}` appears twice", m.name));
            }
        }
        if self.metrics.is_empty() {
            return bad("run has no metrics".into());
        }
        let mut series_names = HashSet::new();
        for s in &self.series {
            if !(s.interval_seconds.is_finite()
                && s.interval_seconds > 0.0
                && s.interval_seconds <= f64::from(MAX_SECONDS))
            {
                return bad(format!(
                    "series `{}` has interval_seconds {}; it must be positive and at most {MAX_SECONDS}",
                    s.name, s.interval_seconds
                ));
            }
            if s.points.len() > MAX_SERIES_POINTS {
                return bad(format!(
                    "series `{}` has {} points; at most {MAX_SERIES_POINTS}",
                    s.name,
                    s.points.len()
                ));
            }
            if let Some(p) = s.points.iter().find(|p| !p.is_finite()) {
                return bad(format!("series `{}` has a non-finite point ({p})", s.name));
            }
            let max = max_value(&s.name);
            if let Some(p) = s.points.iter().find(|p| p.abs() > max) {
                return bad(format!(
                    "series `{}` has a point of {p:e}; no counter or rate gets beyond ±{max:e}",
                    s.name
                ));
            }
            if !series_names.insert(s.name.as_str()) {
                return bad(format!("series `{}` appears twice", s.name));
            }
        }
        if self.unsupported.iter().any(|n| n.trim().is_empty()) {
            return bad("an unsupported metric has an empty name".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurement_modes_parse_as_serde_spells_them() {
        for m in MeasurementMode::ALL {
            assert_eq!(MeasurementMode::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(MeasurementMode::parse("TCG"), None);
    }
    use crate::limits::{MAX_PERCENT, MAX_VALUE};

    fn run() -> RunResult {
        RunResult {
            workload: "dup1".into(),
            mode: TaskMode::Process,
            nr_task: 2,
            warmup_seconds: 1,
            seconds: 5,
            measurement: MeasurementMode::Kvm,
            kernel: None,
            samples: vec![
                SecondSample {
                    total: 200_000,
                    min: 99_000,
                    max: 101_000,
                };
                5
            ],
            metrics: vec![
                MetricValue {
                    name: "will-it-scale.per_process_ops".into(),
                    value: 100_000.0,
                },
                MetricValue {
                    name: "perf-profile.self.cycles-pp.alloc_fd".into(),
                    value: 12.5,
                },
            ],
            series: vec![Series {
                name: "will-it-scale.2.processes".into(),
                interval_seconds: 1.0,
                points: vec![200_000.0; 5],
            }],
            unsupported: Vec::new(),
            profile_event: None,
            warnings: Vec::new(),
        }
    }

    fn refusal(edit: impl FnOnce(&mut RunResult)) -> String {
        let mut r = run();
        edit(&mut r);
        r.validate().unwrap_err().to_string()
    }

    #[test]
    fn an_ordinary_run_passes() {
        assert_eq!(run().validate(), Ok(()));
    }

    #[test]
    fn values_no_counter_or_rate_reaches_are_refused_naming_the_metric() {
        for v in [1.7e308, -1e308, MAX_VALUE * 2.0] {
            let m = refusal(|r| r.metrics[0].value = v);
            assert!(
                m.starts_with("metric `will-it-scale.per_process_ops` is "),
                "{m}"
            );
        }
        let m = refusal(|r| r.metrics[1].value = MAX_PERCENT + 1.0);
        assert!(m.contains("perf-profile.self.cycles-pp.alloc_fd"), "{m}");
        let m = refusal(|r| r.metrics[0].value = f64::NAN);
        assert!(m.contains("`unsupported`"), "{m}");
        let m = refusal(|r| r.series[0].points[3] = 1e300);
        assert!(
            m.starts_with("series `will-it-scale.2.processes` has a point"),
            "{m}"
        );
        // The bounds themselves are values a run may have.
        let mut r = run();
        r.metrics[0].value = -MAX_VALUE;
        r.metrics[1].value = MAX_PERCENT;
        assert_eq!(r.validate(), Ok(()));
    }

    #[test]
    fn counts_beyond_the_limits_are_refused_naming_the_field() {
        assert_eq!(
            refusal(|r| r.seconds = 2_147_483_648),
            "seconds is 2147483648; at most 3600"
        );
        assert_eq!(
            refusal(|r| r.warmup_seconds = u32::MAX),
            "warmup_seconds is 4294967295; at most 3600"
        );
        assert_eq!(
            refusal(|r| r.nr_task = 10_000),
            "nr_task is 10000; at most 8192"
        );
        assert_eq!(
            refusal(|r| r.nr_task = 0),
            "nr_task is 0; a run has at least one task"
        );
        assert_eq!(
            refusal(|r| r.samples = vec![r.samples[0]; MAX_SAMPLES + 1]),
            "run has 3601 samples; at most 3600"
        );
        assert_eq!(
            refusal(|r| r.series[0].points = vec![1.0; MAX_SERIES_POINTS + 1]),
            "series `will-it-scale.2.processes` has 36001 points; at most 36000"
        );
        assert_eq!(
            refusal(|r| r.series[0].interval_seconds = 0.0),
            "series `will-it-scale.2.processes` has interval_seconds 0; it must be positive \
             and at most 3600"
        );
        let many: Vec<MetricValue> = (0..=MAX_METRICS)
            .map(|i| MetricValue {
                name: format!("perf-stat.ps.e{i}"),
                value: 1.0,
            })
            .collect();
        assert_eq!(
            refusal(|r| r.metrics = many),
            "run has 10001 metrics; at most 10000"
        );
    }

    #[test]
    fn names_are_given_once_and_not_empty() {
        assert_eq!(
            refusal(|r| r.metrics[1].name = r.metrics[0].name.clone()),
            "metric `will-it-scale.per_process_ops` appears twice"
        );
        assert_eq!(refusal(|r| r.metrics.clear()), "run has no metrics");
        assert_eq!(
            refusal(|r| r.metrics[0].name = " ".into()),
            "a metric has an empty name"
        );
        assert_eq!(
            refusal(|r| r.series.push(r.series[0].clone())),
            "series `will-it-scale.2.processes` appears twice"
        );
    }
}
