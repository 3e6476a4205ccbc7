//! Worst first: the one order of every list of results a person scans for
//! what to act on (the dashboard's open changes, a tree's change points, a
//! comparison's reports and profiles, the metrics sorted by verdict).
//!
//! A regression beyond δ comes first; then what may still be one or is
//! real but too small to count (undecided, a real change below δ, a real
//! change of a metric with no better direction); then no change; an
//! improvement last, since nobody has to chase it. Within a class the
//! larger |change| comes first; equal ones keep the order they came in.
//!
//! The answer a comparison opens with is another question, which report to
//! name first ([`crate::report::importance`]): there an improvement is news
//! and comes before no change.

use std::cmp::Ordering;

use super::Verdict;

/// How bad a result is; `Ord` puts the worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A regression beyond δ.
    Regression,
    /// Undecided, real but below δ, or a real change of a metric with no
    /// better direction: someone may have to look again.
    Unsure,
    /// Nothing moved that matters.
    NoChange,
    /// Better.
    Improvement,
}

impl Severity {
    /// The class of a verdict (`real_below_delta`: a no change that is real
    /// all the same).
    pub fn of(verdict: Verdict, real_below_delta: bool) -> Severity {
        match verdict {
            Verdict::Regression => Severity::Regression,
            Verdict::Undecided | Verdict::Changed => Severity::Unsure,
            Verdict::NoChange if real_below_delta => Severity::Unsure,
            Verdict::NoChange => Severity::NoChange,
            Verdict::Improvement => Severity::Improvement,
        }
    }
}

/// A result as the worst-first order sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Its verdict.
    pub verdict: Verdict,
    /// A no change that is real all the same.
    pub real_below_delta: bool,
    /// `%change` (percent or points).
    pub change: f64,
}

impl Outcome {
    /// Its class.
    pub fn severity(&self) -> Severity {
        Severity::of(self.verdict, self.real_below_delta)
    }

    /// |change|, 0 when not finite (a change too large to say is no larger
    /// than one said).
    fn size(&self) -> f64 {
        if self.change.is_finite() {
            self.change.abs()
        } else {
            0.0
        }
    }
}

/// `Less` when `a` is worse than `b`: by [`Severity`], then the larger
/// |change|; a result without an outcome (nothing measured on a side) last.
pub fn worst_first(a: Option<&Outcome>, b: Option<&Outcome>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a
            .severity()
            .cmp(&b.severity())
            .then_with(|| b.size().total_cmp(&a.size())),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Sorts `items` worst first, each seen through `outcome`; a stable sort,
/// so equals keep the order they came in.
pub fn sort_worst_first<T>(items: &mut [T], outcome: impl Fn(&T) -> Option<Outcome>) {
    items.sort_by(|a, b| worst_first(outcome(a).as_ref(), outcome(b).as_ref()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(verdict: Verdict, real_below_delta: bool, change: f64) -> Option<Outcome> {
        Some(Outcome {
            verdict,
            real_below_delta,
            change,
        })
    }

    #[test]
    fn regressions_then_unsure_then_no_change_then_improvements_larger_first() {
        let mut items = [
            ("improvement +20%", o(Verdict::Improvement, false, 20.0)),
            ("no change +0.1%", o(Verdict::NoChange, false, 0.1)),
            ("nothing measured", None),
            ("regression -2%", o(Verdict::Regression, false, -2.0)),
            ("real below δ -0.5%", o(Verdict::NoChange, true, -0.5)),
            ("undecided +100%", o(Verdict::Undecided, false, 100.0)),
            ("improvement +5%", o(Verdict::Improvement, false, 5.0)),
            ("regression -10%", o(Verdict::Regression, false, -10.0)),
            ("changed +3 points", o(Verdict::Changed, false, 3.0)),
            ("no change -0.3%", o(Verdict::NoChange, false, -0.3)),
        ];
        sort_worst_first(&mut items, |i| i.1);
        let order: Vec<&str> = items.iter().map(|i| i.0).collect();
        assert_eq!(
            order,
            [
                "regression -10%",
                "regression -2%",
                "undecided +100%",
                "changed +3 points",
                "real below δ -0.5%",
                "no change -0.3%",
                "no change +0.1%",
                "improvement +20%",
                "improvement +5%",
                "nothing measured",
            ]
        );
    }

    #[test]
    fn equals_keep_their_order_and_a_change_not_finite_counts_as_none() {
        let mut items = [
            ("a: nan", o(Verdict::Undecided, false, f64::NAN)),
            ("b: -1%", o(Verdict::Undecided, false, -1.0)),
            ("c: 0", o(Verdict::Undecided, false, 0.0)),
            ("d: -1%", o(Verdict::Undecided, false, -1.0)),
        ];
        sort_worst_first(&mut items, |i| i.1);
        let order: Vec<&str> = items.iter().map(|i| i.0).collect();
        assert_eq!(order, ["b: -1%", "d: -1%", "a: nan", "c: 0"]);
    }

    #[test]
    fn a_class_for_every_verdict() {
        assert_eq!(
            Severity::of(Verdict::Regression, false),
            Severity::Regression
        );
        assert_eq!(Severity::of(Verdict::Undecided, false), Severity::Unsure);
        assert_eq!(Severity::of(Verdict::Changed, false), Severity::Unsure);
        assert_eq!(Severity::of(Verdict::NoChange, true), Severity::Unsure);
        assert_eq!(Severity::of(Verdict::NoChange, false), Severity::NoChange);
        assert_eq!(
            Severity::of(Verdict::Improvement, false),
            Severity::Improvement
        );
        assert!(Severity::Regression < Severity::Unsure);
        assert!(Severity::NoChange < Severity::Improvement);
    }
}
