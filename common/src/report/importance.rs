//! Which report of a comparison a reader must see first. A comparison of
//! several workloads or task counts has one report each; the text report's
//! first line, the page's first sentence, the mail's subject and the
//! listing's headline all name the most important one, in this one order:
//! regressions, then improvements, then other real changes, then undecided,
//! then no change; within a verdict the larger change first; a report
//! without a headline value last. Equal ones keep the order they came in
//! (workload as submitted, then nr_task).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::format::{change_text, interval_text};
use super::model::{Comparison, MetricComparison};
use crate::run::TaskMode;
use crate::stats::Verdict;

/// A verdict's place in the order (0 first).
pub fn verdict_rank(v: Verdict) -> u8 {
    match v {
        Verdict::Regression => 0,
        Verdict::Improvement => 1,
        Verdict::Changed => 2,
        Verdict::Undecided => 3,
        Verdict::NoChange => 4,
    }
}

/// `Less` when report `a` matters more than `b` (see the module
/// documentation).
pub fn cmp_importance(a: &Comparison, b: &Comparison) -> Ordering {
    let key = |c: &Comparison| {
        c.headline_metric().map(|m| {
            let size = m.change.filter(|v| v.is_finite()).map_or(0.0, f64::abs);
            (verdict_rank(m.verdict), size)
        })
    };
    match (key(a), key(b)) {
        (Some((ra, sa)), Some((rb, sb))) => ra.cmp(&rb).then(sb.total_cmp(&sa)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// `items` most important first, each seen through `report`; a stable
/// sort, so equals keep their order.
pub fn by_importance<T>(items: &[T], report: impl Fn(&T) -> &Comparison) -> Vec<&T> {
    let mut sorted: Vec<&T> = items.iter().collect();
    sorted.sort_by(|a, b| cmp_importance(report(a), report(b)));
    sorted
}

/// The most important of `items`, if any.
pub fn most_important<T>(items: &[T], report: impl Fn(&T) -> &Comparison) -> Option<&T> {
    items
        .iter()
        .min_by(|a, b| cmp_importance(report(a), report(b)))
}

/// The most important report's verdict in a mail subject's words:
/// `-11.3% regression of will-it-scale.per_process_ops (dup1, nr_task 8)`
/// (the task count only when it is not 1); `None` without a headline value.
pub fn subject_line(c: &Comparison) -> Option<String> {
    let m = c.headline_metric()?;
    m.change?;
    let h = &c.header;
    let tasks = if h.nr_task == 1 {
        String::new()
    } else {
        format!(", nr_task {}", h.nr_task)
    };
    Some(format!(
        "{} ({}{tasks})",
        super::summary::change_phrase(c, m),
        h.workload
    ))
}

/// A comparison's most important report (regressions first, larger
/// first) in the columns a listing shows instead of a sentence per report:
/// which report, its headline metric's change, interval and verdict, and
/// how many reports there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineColumns {
    /// The report's workload.
    pub workload: String,
    /// Its task count.
    pub nr_task: u32,
    /// Processes or threads.
    pub mode: TaskMode,
    /// The headline metric.
    pub metric: String,
    /// `-11.3%`.
    pub change: String,
    /// The interval of the change (`-12.02% … -10.51%`); empty without one.
    pub interval: String,
    /// The metric's verdict.
    pub verdict: Verdict,
    /// A real change under δ, which counts as none.
    pub below_delta: bool,
    /// Reports of the comparison with a headline value, this one among them.
    pub reports: u32,
    /// The step that moved it, for a comparison measured step by step
    /// (its report's [`moved_by`](crate::report::ReportHeader::moved_by)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_by: Option<String>,
    /// The size of `change` (its absolute value), which orders a verdict's
    /// comparisons in a listing; absent from columns stored before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<f64>,
}

impl HeadlineColumns {
    /// The columns of the most important of `reports` with a headline
    /// change; `None` when none has one.
    pub fn of<'a>(reports: impl IntoIterator<Item = &'a Comparison>) -> Option<Self> {
        let measured: Vec<(&Comparison, &MetricComparison)> = reports
            .into_iter()
            .filter_map(|c| Some((c, c.headline_metric().filter(|m| m.change.is_some())?)))
            .collect();
        let &(c, m) = most_important(&measured, |&(c, _)| c)?;
        Some(HeadlineColumns {
            workload: c.header.workload.clone(),
            nr_task: c.header.nr_task,
            mode: c.header.mode,
            metric: m.name.clone(),
            change: change_text(m),
            interval: interval_text(m),
            verdict: m.verdict,
            below_delta: m.real_below_delta,
            reports: u32::try_from(measured.len()).unwrap_or(u32::MAX),
            moved_by: c.header.moved_by.clone(),
            size: m.change.map(f64::abs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::{compare, report, run};

    const OPS: &str = "will-it-scale.per_process_ops";

    #[test]
    fn a_regression_comes_before_no_change_whatever_came_first() {
        // The review's case: no change at 1 task, −11.3% at 8.
        let reports = [report(1, 1000.0, 1000.0), report(8, 1000.0, 887.0)];
        let order: Vec<u32> = by_importance(&reports, |c| c)
            .iter()
            .map(|c| c.header.nr_task)
            .collect();
        assert_eq!(order, [8, 1]);
        assert_eq!(most_important(&reports, |c| c).unwrap().header.nr_task, 8);
        assert_eq!(
            subject_line(&reports[1]).unwrap(),
            "-11.3% regression of will-it-scale.per_process_ops (dup1, nr_task 8)"
        );
    }

    #[test]
    fn regressions_improvements_undecided_no_change_larger_first() {
        let undecided = {
            // Too few runs a side to decide anything.
            let (mut b, mut p) = (run(&[(OPS, 1000.0)]), run(&[(OPS, 2000.0)]));
            b.nr_task = 5;
            p.nr_task = 5;
            let (b, p) = (vec![b], vec![p]);
            compare("lab", &b, &p)
        };
        let reports = [
            report(1, 1000.0, 1000.0), // no change
            report(2, 1000.0, 1050.0), // +5% improvement
            undecided,                 // +100%, undecided
            report(3, 1000.0, 980.0),  // −2% regression
            report(4, 1000.0, 1200.0), // +20% improvement
            report(6, 1000.0, 900.0),  // −10% regression
        ];
        let order: Vec<u32> = by_importance(&reports, |c| c)
            .iter()
            .map(|c| c.header.nr_task)
            .collect();
        assert_eq!(order, [6, 3, 4, 2, 5, 1]);
        assert_eq!(verdict_rank(Verdict::Changed), 2);
    }

    #[test]
    fn equals_keep_their_order_and_empty_reports_go_last() {
        let empty = compare("lab", &[], &[]);
        let reports = [
            empty.clone(),
            report(1, 1000.0, 1000.0),
            report(2, 1000.0, 1000.0),
        ];
        let order: Vec<u32> = by_importance(&reports, |c| c)
            .iter()
            .map(|c| c.header.nr_task)
            .collect();
        assert_eq!(order, [1, 2, 0]);
        assert_eq!(subject_line(&empty), None);
        assert!(most_important::<Comparison>(&[], |c| c).is_none());
    }

    #[test]
    fn the_columns_are_the_worst_report_s_whatever_comes_first() {
        // The review's case: no change at 1 task, −11.3% at 8.
        let one = report(1, 1000.0, 1000.0);
        let eight = report(8, 1000.0, 887.0);
        let columns = HeadlineColumns::of([&one, &eight]).unwrap();
        assert_eq!(
            (columns.workload.as_str(), columns.nr_task, columns.reports),
            ("dup1", 8, 2)
        );
        assert_eq!(columns.change, "-11.3%");
        assert_eq!(columns.verdict, Verdict::Regression);
        assert!(columns.interval.starts_with("-11."), "{}", columns.interval);
        assert!(!columns.below_delta);
        // Nothing measured on both sides: no columns.
        let nothing = compare("lab", &[run(&[(OPS, 1000.0)])], &[]);
        assert_eq!(HeadlineColumns::of([&nothing]), None);
    }
}
