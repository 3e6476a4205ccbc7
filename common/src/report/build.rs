//! Builds a [`Comparison`] from the base and patched runs of one
//! (workload, mode, nr_task): collects each metric's per-run values, runs
//! every statistic, controls the false-discovery rate across the report and
//! judges each metric.

use std::collections::HashMap;

use super::model::{Comparison, MetricComparison, PipelineFact, Presence, ReportHeader, SideStats};
use super::order::sort_rows;
use crate::Error;
use crate::metric::{direction, is_pipeline_fact};
use crate::run::RunResult;
use crate::stats::{
    ChangeUnit, Evidence, Verdict, VerdictPolicy, benjamini_hochberg, change, change_interval,
    judge, mann_whitney, mean, population_stddev, stddev_percent, welch_test, zero_day_check,
};

/// Builds the report. Runs may be missing on either side (a live report
/// while jobs run); runs of other parameters than the first are an error.
pub fn build_comparison(
    header: ReportHeader,
    base: &[RunResult],
    patched: &[RunResult],
    policy: &VerdictPolicy,
) -> Result<Comparison, Error> {
    check_same_parameters(base.iter().chain(patched))?;

    let table = ValueTable::gather(base, patched);
    let (facts, names): (Vec<usize>, Vec<usize>) = table
        .sorted_metrics()
        .into_iter()
        .partition(|&i| is_pipeline_fact(table.names[i]));
    let pipeline = facts
        .into_iter()
        .map(|i| {
            let side_mean = |column: &[Option<f64>]| {
                let v: Vec<f64> = column.iter().flatten().copied().collect();
                mean(&v)
            };
            PipelineFact {
                name: table.names[i].to_string(),
                base: side_mean(table.base(i)),
                patched: side_mean(table.patched(i)),
            }
        })
        .collect();

    let mut metrics: Vec<MetricComparison> = names
        .into_iter()
        .map(|i| compare_metric(&table, i, base, patched, policy.confidence))
        .collect();

    // False-discovery control over every metric that has a test.
    let tested: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].welch.is_some())
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .filter_map(|&i| metrics[i].welch.map(|w| w.p))
        .collect();
    for (&i, q) in tested.iter().zip(benjamini_hochberg(&p)) {
        metrics[i].q = Some(q);
    }

    for m in &mut metrics {
        let (verdict, reason, real_below_delta) = match (m.base.presence, m.patched.presence) {
            (Presence::Unsupported, _) | (_, Presence::Unsupported) => (
                Verdict::Undecided,
                "not supported on this machine".to_string(),
                false,
            ),
            (Presence::Absent, _) => (
                Verdict::Undecided,
                "measured on the patched side only".into(),
                false,
            ),
            (_, Presence::Absent) => (
                Verdict::Undecided,
                "measured on the base side only".into(),
                false,
            ),
            (Presence::Measured, Presence::Measured) => {
                let j = judge(
                    &Evidence {
                        direction: m.direction,
                        unit: m.unit,
                        base_runs: m.base.values.len(),
                        patched_runs: m.patched.values.len(),
                        change: m.change,
                        interval: m.interval,
                        q: m.q,
                        mann_whitney: m.mann_whitney,
                    },
                    policy,
                );
                (j.verdict, j.reason, j.real_below_delta)
            }
        };
        m.verdict = verdict;
        m.reason = reason;
        m.real_below_delta = real_below_delta;
    }
    sort_rows(&mut metrics);

    let mut warnings: Vec<String> = Vec::new();
    for run in base.iter().chain(patched) {
        for w in &run.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }

    let mut c = Comparison {
        header,
        base_runs: base.len(),
        patched_runs: patched.len(),
        policy: *policy,
        metrics,
        warnings,
        pipeline,
        explanation: None,
    };
    c.explanation = super::explain::explain(&c);
    Ok(c)
}

/// A header with what the runs themselves know; the caller adds machine,
/// subjects and URLs it has.
pub fn header_from_runs(machine: &str, base: &[RunResult], patched: &[RunResult]) -> ReportHeader {
    let first = base.first().or(patched.first());
    let base_kernel = base.iter().find_map(|r| r.kernel.as_ref());
    let patched_kernel = patched.iter().find_map(|r| r.kernel.as_ref());
    let base_id = base_kernel.map_or_else(|| "base".to_string(), |k| k.source.clone());
    let patched_id = match patched_kernel {
        Some(k) => match &k.patches_sha256 {
            Some(sha) => format!("{}+{}", k.source, short(sha, 10)),
            None => k.source.clone(),
        },
        None => "patched".to_string(),
    };
    let kernel = base_kernel.or(patched_kernel);
    ReportHeader {
        machine: machine.to_string(),
        machine_description: None,
        workload: first.map(|r| r.workload.clone()).unwrap_or_default(),
        mode: first.map(|r| r.mode).unwrap_or_default(),
        nr_task: first.map_or(0, |r| r.nr_task),
        nr_task_requested: None,
        measurement: first.map(|r| r.measurement),
        base: super::KernelLabel {
            id: base_id,
            subject: None,
        },
        patched: super::KernelLabel {
            id: patched_id,
            subject: None,
        },
        base_source: base_kernel.map(|k| k.source.clone()),
        patch_subject: None,
        name: None,
        compiler: kernel.map(|k| k.compiler.clone()),
        config: kernel.map(|k| short(&k.config_sha256, 12)),
        profile_event: base
            .iter()
            .chain(patched)
            .find_map(|r| r.profile_event.clone()),
        report_url: None,
        delta_source: None,
        delta_aa: None,
        code_layout: None,
        looks: None,
        runs_steps: Vec::new(),
        runs_from_steps: None,
        moved_by: None,
    }
}

/// The first `n` characters of an id.
fn short(id: &str, n: usize) -> String {
    id.chars().take(n).collect()
}

fn check_same_parameters<'a>(mut runs: impl Iterator<Item = &'a RunResult>) -> Result<(), Error> {
    let Some(first) = runs.next() else {
        return Ok(());
    };
    let key = |r: &RunResult| format!("{}/{}/{}", r.workload, r.mode.as_str(), r.nr_task);
    let expected = key(first);
    for run in runs {
        let found = key(run);
        if found != expected {
            return Err(Error::MixedRuns { expected, found });
        }
    }
    Ok(())
}

/// Every metric's value in every run, gathered in one pass over the runs
/// (looking each metric up in each run would cost metrics × values).
struct ValueTable<'a> {
    /// Metric names (measured or unsupported) in order of first sight.
    names: Vec<&'a str>,
    /// Runs: the base runs, then the patched ones.
    runs: usize,
    base_runs: usize,
    /// `values[metric * runs + run]`: the run's value, the first if a run
    /// has the name twice.
    values: Vec<Option<f64>>,
    /// Per run: it was profiled (has a profile event or a perf-profile
    /// entry).
    profiled: Vec<bool>,
}

impl<'a> ValueTable<'a> {
    fn gather(base: &'a [RunResult], patched: &'a [RunResult]) -> Self {
        let runs = base.len() + patched.len();
        let mut index: HashMap<&'a str, usize> = HashMap::new();
        let mut names = Vec::new();
        let mut values: Vec<Option<f64>> = Vec::new();
        let mut profiled = Vec::with_capacity(runs);
        for (r, run) in base.iter().chain(patched).enumerate() {
            let measured = run.metrics.iter().map(|m| (m.name.as_str(), Some(m.value)));
            let unsupported = run.unsupported.iter().map(|u| (u.as_str(), None));
            for (name, value) in measured.chain(unsupported) {
                let i = *index.entry(name).or_insert_with(|| {
                    names.push(name);
                    values.resize(values.len() + runs, None);
                    names.len() - 1
                });
                let cell = &mut values[i * runs + r];
                if cell.is_none() {
                    *cell = value;
                }
            }
            profiled.push(
                run.profile_event.is_some()
                    || run
                        .metrics
                        .iter()
                        .any(|m| m.name.starts_with("perf-profile.")),
            );
        }
        ValueTable {
            names,
            runs,
            base_runs: base.len(),
            values,
            profiled,
        }
    }

    /// Metric indices in name order.
    fn sorted_metrics(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_unstable_by_key(|&i| self.names[i]);
        order
    }

    fn base(&self, metric: usize) -> &[Option<f64>] {
        &self.values[metric * self.runs..][..self.base_runs]
    }

    fn patched(&self, metric: usize) -> &[Option<f64>] {
        &self.values[metric * self.runs + self.base_runs..][..self.runs - self.base_runs]
    }
}

fn compare_metric(
    table: &ValueTable<'_>,
    metric: usize,
    base: &[RunResult],
    patched: &[RunResult],
    confidence: f64,
) -> MetricComparison {
    let name = table.names[metric];
    let unit = ChangeUnit::for_metric(name);
    let b = side(
        name,
        table.base(metric),
        &table.profiled[..base.len()],
        base,
    );
    let p = side(
        name,
        table.patched(metric),
        &table.profiled[base.len()..],
        patched,
    );
    let (bv, pv) = (&b.values, &p.values);
    let both = !bv.is_empty() && !pv.is_empty();
    MetricComparison {
        name: name.to_string(),
        direction: direction(name),
        unit,
        change: match (b.mean, p.mean) {
            (Some(mb), Some(mp)) => change(unit, mb, mp),
            _ => None,
        },
        interval: if both {
            change_interval(unit, bv, pv, confidence)
        } else {
            None
        },
        welch: welch_test(bv, pv),
        mann_whitney: mann_whitney(bv, pv),
        q: None,
        zero_day: zero_day_check(name, bv, pv),
        verdict: Verdict::Undecided,
        reason: String::new(),
        real_below_delta: false,
        base: b,
        patched: p,
    }
}

/// One side's values of a metric (`column`: each run's value, if any). A
/// perf-profile entry missing from a run that was profiled is below the
/// collector's 0.05% cut-off: it counts as 0 there, as in 0-day's tables
/// (`0.00 +0.1 0.07 …dup@plt`).
fn side(name: &str, column: &[Option<f64>], profiled: &[bool], runs: &[RunResult]) -> SideStats {
    let is_profile = name.starts_with("perf-profile.");
    let values: Vec<f64> = column
        .iter()
        .zip(profiled)
        .filter_map(|(&value, &profiled)| value.or((is_profile && profiled).then_some(0.0)))
        .collect();
    let presence = if !values.is_empty() {
        Presence::Measured
    } else if runs.iter().any(|r| r.unsupported.iter().any(|u| u == name)) {
        Presence::Unsupported
    } else {
        Presence::Absent
    };
    SideStats {
        presence,
        mean: mean(&values),
        stddev: population_stddev(&values),
        stddev_percent: stddev_percent(&values),
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::run;
    use crate::stats::Interval;

    fn build(base: &[RunResult], patched: &[RunResult]) -> Comparison {
        let header = header_from_runs("qemu-tcg", base, patched);
        build_comparison(header, base, patched, &VerdictPolicy::default()).unwrap()
    }

    const OPS: &str = "will-it-scale.per_process_ops";

    /// Inside a −10.5% regression, cache misses a second fall because
    /// fewer operations ran: the row says it changed, not that it is an
    /// improvement; instructions per operation keep their direction.
    #[test]
    fn a_rate_a_second_that_follows_throughput_is_no_improvement() {
        let side = |ops: f64, misses: f64, path: f64| {
            [0.9999, 1.0, 1.0001]
                .map(|f| {
                    run(&[
                        (OPS, ops * f),
                        ("perf-stat.ps.cache-misses", misses * f),
                        ("perf-stat.overall.path-length", path * f),
                    ])
                })
                .to_vec()
        };
        let c = build(&side(1000.0, 5000.0, 800.0), &side(895.0, 4475.0, 880.0));
        assert_eq!(c.metric(OPS).unwrap().verdict, Verdict::Regression);
        assert_eq!(
            c.metric("perf-stat.ps.cache-misses").unwrap().verdict,
            Verdict::Changed
        );
        assert_eq!(
            c.metric("perf-stat.overall.path-length").unwrap().verdict,
            Verdict::Regression
        );
    }

    #[test]
    fn deterministic_runs_with_different_constants_are_a_real_change() {
        // -icount: 1000 ops on every base run, 1100 on every patched run
        let base = vec![run(&[(OPS, 1000.0)]); 3];
        let patched = vec![run(&[(OPS, 1100.0)]); 3];
        let c = build(&base, &patched);
        let m = c.metric(OPS).unwrap();
        assert_eq!(m.change, Some(10.0));
        assert_eq!(m.welch.unwrap().p, 0.0);
        assert_eq!(m.q, Some(0.0));
        assert_eq!(
            m.interval,
            Some(Interval::Bounded {
                low: 10.0,
                high: 10.0
            })
        );
        assert_eq!(m.verdict, Verdict::Improvement);
        assert_eq!(m.base.stddev_percent, Some(0.0));
    }

    #[test]
    fn identical_constant_runs_are_no_change() {
        let c = build(
            &vec![run(&[(OPS, 1000.0)]); 3],
            &vec![run(&[(OPS, 1000.0)]); 3],
        );
        let m = c.metric(OPS).unwrap();
        assert_eq!((m.change, m.verdict), (Some(0.0), Verdict::NoChange));
        assert_eq!(m.welch.unwrap().p, 1.0);
    }

    #[test]
    fn one_run_a_side_shows_means_and_decides_nothing() {
        let c = build(&[run(&[(OPS, 1000.0)])], &[run(&[(OPS, 1500.0)])]);
        let m = c.metric(OPS).unwrap();
        assert_eq!(m.change, Some(50.0));
        assert_eq!(
            (m.welch, m.interval, m.q, m.zero_day),
            (None, None, None, None)
        );
        assert_eq!(m.base.stddev, None);
        assert_eq!(m.verdict, Verdict::Undecided);
        assert_eq!(
            m.reason,
            "too few runs (1 base, 1 patched; 3 a side needed)"
        );
    }

    #[test]
    fn pipeline_facts_are_reported_beside_the_table_not_judged() {
        let b: Vec<_> = [440.0, 440.0, 440.0]
            .iter()
            .map(|&s| run(&[(OPS, 1000.0), ("kernel.build_seconds", s)]))
            .collect();
        let p: Vec<_> = [19.0, 20.0, 21.0]
            .iter()
            .map(|&s| run(&[(OPS, 1000.0), ("kernel.build_seconds", s)]))
            .collect();
        let c = build(&b, &p);
        assert!(c.metric("kernel.build_seconds").is_none());
        assert_eq!(
            c.pipeline,
            [PipelineFact {
                name: "kernel.build_seconds".into(),
                base: Some(440.0),
                patched: Some(20.0),
            }]
        );
        // Only the ops metric was tested, so BH saw one p-value.
        assert_eq!(c.tested_metrics(), 1);
    }

    #[test]
    fn metrics_on_one_side_only_and_unsupported_ones_are_never_zero() {
        let mut b = run(&[(OPS, 1000.0), ("perf-stat.ps.page-faults", 3.0)]);
        b.unsupported.push("perf-stat.ps.cycles".into());
        let mut p = run(&[(OPS, 1000.0), ("perf-stat.ps.cycles", 5e9)]);
        p.unsupported.push("perf-stat.ps.cycles".into());
        let c = build(&[b], &[p]);
        let boot = c.metric("perf-stat.ps.page-faults").unwrap();
        assert_eq!(boot.patched.presence, Presence::Absent);
        assert_eq!((boot.patched.mean, boot.change), (None, None));
        assert_eq!(boot.reason, "measured on the base side only");
        let cycles = c.metric("perf-stat.ps.cycles").unwrap();
        assert_eq!(cycles.base.presence, Presence::Unsupported);
        assert_eq!(cycles.base.values, Vec::<f64>::new());
        assert_eq!(cycles.reason, "not supported on this machine");
    }

    #[test]
    fn a_profile_entry_missing_from_a_profiled_run_is_below_the_cut_off() {
        let entry = "perf-profile.self.cycles-pp.dup@plt";
        let mut b = run(&[(OPS, 1.0), ("perf-profile.self.cycles-pp.dup", 10.0)]);
        b.profile_event = Some("cpu-clock".into());
        let p = run(&[(OPS, 1.0), (entry, 0.07)]);
        let unprofiled = run(&[(OPS, 1.0)]);
        let c = build(&[b, unprofiled], &[p]);
        let m = c.metric(entry).unwrap();
        // the profiled base run counts 0; the run without a profile counts nothing
        assert_eq!(m.base.values, vec![0.0]);
        assert!((m.change.unwrap() - 0.07).abs() < 1e-12);
        // a will-it-scale metric missing from a run is just missing
        assert_eq!(c.metric(OPS).unwrap().base.values, vec![1.0, 1.0]);
    }

    #[test]
    fn q_values_cover_every_tested_metric() {
        // ops change clearly, cpi does not: 2 tests, BH multiplies the
        // smaller p by 2
        let base: Vec<_> = [1000.0, 1010.0, 990.0]
            .iter()
            .map(|&v| run(&[(OPS, v), ("perf-stat.i.cpi", 1.0 + v / 1e5)]))
            .collect();
        let patched: Vec<_> = [1200.0, 1210.0, 1190.0]
            .iter()
            .map(|&v| run(&[(OPS, v), ("perf-stat.i.cpi", 1.0 + v / 1e6)]))
            .collect();
        let c = build(&base, &patched);
        assert_eq!(c.tested_metrics(), 2);
        let ops = c.metric(OPS).unwrap();
        let p = ops.welch.unwrap().p;
        // same spread (10), difference 200: t = 200/√(100/3·2) = 24.49, df 4
        assert!(p < 1e-4);
        let cpi_p = c.metric("perf-stat.i.cpi").unwrap().welch.unwrap().p;
        assert!(p < cpi_p);
        // ops has the smallest of m = 2 p-values: q = min(2p/1, cpi_p·2/2)
        assert_eq!(ops.q, Some((2.0 * p).min(cpi_p)));
        assert_eq!(ops.verdict, Verdict::Improvement);
    }

    #[test]
    fn runs_of_other_parameters_are_refused() {
        let mut other = run(&[(OPS, 1.0)]);
        other.nr_task = 4;
        let err = build_comparison(
            header_from_runs("m", &[], &[]),
            &[run(&[(OPS, 1.0)])],
            &[other],
            &VerdictPolicy::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Error::MixedRuns {
                expected: "dup1/process/2".into(),
                found: "dup1/process/4".into()
            }
        );
    }

    #[test]
    fn an_empty_side_is_a_live_report_not_an_error() {
        let c = build(&[run(&[(OPS, 1.0)])], &[]);
        let m = c.metric(OPS).unwrap();
        assert_eq!(m.patched.presence, Presence::Absent);
        assert_eq!(m.verdict, Verdict::Undecided);
    }

    #[test]
    fn the_header_names_the_kernels_from_their_identity() {
        let kernel = |patches: Option<&str>| crate::run::KernelIdentity {
            release: "6.1.0".into(),
            source: "linux-source-6.1".into(),
            patches_sha256: patches.map(String::from),
            patches: patches.map(|_| 1),
            config_sha256: "0123456789abcdef0123".into(),
            compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
            version: String::new(),
        };
        let mut b = run(&[(OPS, 1.0)]);
        b.kernel = Some(kernel(None));
        let mut p = run(&[(OPS, 1.0)]);
        p.kernel = Some(kernel(Some("fedcba9876543210fedc")));
        let h = header_from_runs("qemu-tcg", &[b], &[p]);
        assert_eq!(h.base.id, "linux-source-6.1");
        assert_eq!(h.patched.id, "linux-source-6.1+fedcba9876");
        assert_eq!(h.config.as_deref(), Some("0123456789ab"));
        assert_eq!((h.workload.as_str(), h.nr_task), ("dup1", 2));
    }
}
