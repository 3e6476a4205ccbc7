//! What a comparison report says, independent of how it is shown: the header
//! (which machine, workload and kernels) and one row per metric with both
//! sides' runs, 0-day's numbers, our tests and the verdict. The text table,
//! the JSON API and the HTML page all render this one structure, so they
//! cannot disagree.

use serde::{Deserialize, Serialize};

use crate::metric::Direction;
use crate::run::{MeasurementMode, TaskMode};
use crate::stats::{
    ChangeUnit, Interval, MannWhitney, Outcome, Verdict, VerdictPolicy, WelchTest, ZeroDayCheck,
};

/// One kernel of the comparison as the report names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLabel {
    /// Commit id, tarball name, or tarball name + patch series hash.
    pub id: String,
    /// Commit subject or patch subject, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// Everything the report says about what was compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportHeader {
    /// Machine name (0-day's `tbox_group`).
    pub machine: String,
    /// One line about the machine (CPUs, memory), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_description: Option<String>,
    /// Workload name (0-day's `test`).
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Tasks the runs used.
    pub nr_task: u32,
    /// nr_task as requested when it was a share of CPUs (`100%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_task_requested: Option<String>,
    /// How the numbers were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<MeasurementMode>,
    /// The base kernel.
    pub base: KernelLabel,
    /// The patched kernel.
    pub patched: KernelLabel,
    /// Where the base tree came from (`url@commit`, tarball name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_source: Option<String>,
    /// Subject of the patch (a step's own, or the one patch compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_subject: Option<String>,
    /// What was compared, as kernel people name it (see
    /// [`crate::naming::name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<crate::naming::Name>,
    /// Compiler that built both kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// Short hash of the kernel config both sides used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// Event perf sampled for `perf-profile.*` (`cycles` or `cpu-clock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_event: Option<String>,
    /// Where the full report lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_url: Option<String>,
    /// δ and where it came from (`δ 0.21%: 2 × the ±0.105% that A/A
    /// comparison 12 measured (tcg-icount, open1 · process · 1 task,
    /// 2026-12-01)`), as the server judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_source: Option<String>,
    /// Whether both kernels were built with functions aligned, in a
    /// sentence (see [`crate::api::submission::code_layout_line`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_layout: Option<String>,
    /// The A/A comparison that calibrated δ, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_aa: Option<i64>,
    /// When boots were added while the verdict was undecided: the runs a
    /// side at each look, then the final count (`[3, 6, 12]`). Repeated
    /// looks make p-values slightly optimistic, so reports say so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_steps: Vec<u32>,
    /// A whole series measured by its steps: the step whose base boots are
    /// the base runs and the step whose patched boots are the patched runs
    /// (`[1, 3]`), each interleaved within its own step only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_from_steps: Option<[u32; 2]>,
    /// For a comparison measured step by step: the step that moved this
    /// report's headline ([`crate::report::culprit`]), in words, set when
    /// it is rendered (the steps settle on their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_by: Option<String>,
    /// For a comparison that may add boots while undecided: this look and
    /// how many are possible (`[1, 3]`); the level is spent across them
    /// ([`crate::stats::looks`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<[u32; 2]>,
}

/// Whether a side has values for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Presence {
    /// At least one run has a value.
    Measured,
    /// No run has a value (the metric exists only on the other side).
    Absent,
    /// The machine could not count it (perf's `<not supported>`).
    Unsupported,
}

/// One side of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideStats {
    /// Whether there are values.
    pub presence: Presence,
    /// The value of each run that has one, in run order.
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: Option<f64>,
    /// Population standard deviation (0-day's).
    pub stddev: Option<f64>,
    /// stddev ÷ |mean| × 100 (0-day's `%stddev`).
    pub stddev_percent: Option<f64>,
}

/// One metric of the report: one row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Metric name as 0-day prints it.
    pub name: String,
    /// Which way is better.
    pub direction: Direction,
    /// Whether `change` is in percent or in points.
    pub unit: ChangeUnit,
    /// The base side.
    pub base: SideStats,
    /// The patched side.
    pub patched: SideStats,
    /// `%change`: relative change of the means in percent, or the difference
    /// in points for percentage metrics.
    pub change: Option<f64>,
    /// Confidence interval of `change` (Fieller, or Welch for points).
    pub interval: Option<Interval>,
    /// Welch's t-test.
    pub welch: Option<WelchTest>,
    /// Exact Mann–Whitney test.
    pub mann_whitney: Option<MannWhitney>,
    /// Benjamini–Hochberg q-value of Welch's p across the report.
    pub q: Option<f64>,
    /// 0-day's own range-separation rule, for familiarity.
    pub zero_day: Option<ZeroDayCheck>,
    /// Our verdict.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// A no change that is real all the same: significant (q within the
    /// level, the interval excludes 0) but smaller than δ. Absent when
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub real_below_delta: bool,
}

impl MetricComparison {
    /// The verdict in a word or two: `regression`, `no change`, and `real,
    /// below δ` for a real change smaller than δ.
    pub fn verdict_words(&self) -> &'static str {
        if self.real_below_delta {
            "real, below δ"
        } else {
            self.verdict.as_str()
        }
    }

    /// What the worst-first order ([`crate::stats::severity`]) sees of it;
    /// `None` without a change (not measured on a side), which sorts last.
    pub fn outcome(&self) -> Option<Outcome> {
        Some(Outcome {
            verdict: self.verdict,
            real_below_delta: self.real_below_delta,
            change: self.change?,
        })
    }
}

impl ReportHeader {
    /// Which of a comparison's reports this is, in words
    /// (`open1 · process · nr_task 4`): the title pages give it and the
    /// name a summary line uses.
    pub fn title(&self) -> String {
        format!(
            "{} · {} · nr_task {}",
            self.workload,
            self.mode.as_str(),
            self.nr_task
        )
    }

    /// Whether this is an A/A calibration's report (named as one,
    /// [`crate::naming::NameKind::Calibration`]): it measures a noise
    /// floor, and has no patch and no verdict to answer with.
    pub fn is_calibration(&self) -> bool {
        self.name
            .as_ref()
            .is_some_and(|n| n.kind == crate::naming::NameKind::Calibration)
    }
}

/// A whole comparison report for one (machine, workload, mode, nr_task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What was compared.
    pub header: ReportHeader,
    /// Runs on the base kernel.
    pub base_runs: usize,
    /// Runs on the patched kernel.
    pub patched_runs: usize,
    /// The thresholds the verdicts used.
    pub policy: VerdictPolicy,
    /// Every metric, in 0-day's row order.
    pub metrics: Vec<MetricComparison>,
    /// Things a reader should know (collected from the runs).
    pub warnings: Vec<String>,
    /// Pipeline facts (`kernel.*`: build and boot seconds, image size) with
    /// each side's mean; not judged.
    #[serde(default)]
    pub pipeline: Vec<PipelineFact>,
    /// Why the headline metric moved, in one sentence derived from the
    /// report's own rows ([`super::explain`]), or "no explanation found";
    /// absent when the headline is no real change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// A `kernel.*` pipeline fact of both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineFact {
    /// `kernel.build_seconds`, `kernel.boot_seconds`, `kernel.image_bytes`.
    pub name: String,
    /// Mean over the base runs that have it.
    pub base: Option<f64>,
    /// Mean over the patched runs that have it.
    pub patched: Option<f64>,
}

impl Comparison {
    /// A metric's row by name.
    pub fn metric(&self, name: &str) -> Option<&MetricComparison> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The metric the headline is about: `will-it-scale.per_process_ops`
    /// (or `per_thread_ops`), else the first will-it-scale metric.
    pub fn headline_metric(&self) -> Option<&MetricComparison> {
        let name = crate::metric::wis_per_task_ops(self.header.mode);
        self.metric(&name).or_else(|| {
            self.metrics
                .iter()
                .find(|m| m.name.starts_with("will-it-scale."))
        })
    }

    /// Its headline metric's outcome: where the report sorts worst first
    /// ([`crate::stats::severity`]); `None` without a headline change.
    pub fn outcome(&self) -> Option<Outcome> {
        self.headline_metric().and_then(MetricComparison::outcome)
    }

    /// Metrics that entered the false-discovery control.
    pub fn tested_metrics(&self) -> usize {
        self.metrics.iter().filter(|m| m.q.is_some()).count()
    }
}
