//! Our verdict per metric: improvement, regression, changed (a real change
//! of a metric that is neither better nor worse by itself), no change, or
//! undecided. Stricter than 0-day's range rule, and it says why.
//!
//! The rule, with δ the smallest change that matters (the measurement
//! mode's default, or what the machine's A/A comparison calibrated, down or
//! up: [`super::calibration`]):
//!
//! 1. fewer than `min_runs` runs on a side → **undecided** (too few runs);
//! 2. no bounded confidence interval → **undecided**;
//! 3. the whole 95% interval inside (−δ, +δ) → **no change**: whatever the
//!    patch does here is smaller than what matters. When the change is
//!    significant all the same (q ≤ `fdr`, the interval excludes 0) the
//!    judgement says so (`real_below_delta`): "real (q 0.0035) but below this
//!    machine's δ of 3.3%", not a bare "no change";
//! 4. significant — q ≤ `fdr` (Welch p, Benjamini–Hochberg across the
//!    report) and the interval excludes 0 — with |change| ≥ δ → the metric's
//!    direction decides **improvement** / **regression** / **changed**,
//!    unless the exact Mann–Whitney test could reach the significance level
//!    with these run counts and does not (a distribution-free veto against
//!    one odd run fooling the t-test) → **undecided**;
//! 5. anything else → **undecided**: the interval is too wide to tell a real
//!    δ-sized change from none, and more runs would decide.

use serde::{Deserialize, Serialize};

use super::change::ChangeUnit;
use super::interval::Interval;
use super::mann_whitney::MannWhitney;
use crate::metric::Direction;

/// The verdict for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A real change in the good direction.
    Improvement,
    /// A real change in the bad direction.
    Regression,
    /// A real change of a metric that is neither better nor worse by itself.
    Changed,
    /// Any change is smaller than what matters.
    NoChange,
    /// The runs cannot tell yet.
    Undecided,
}

impl Verdict {
    /// `improvement`, `regression`, `changed`, `no change`, `undecided`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::Changed => "changed",
            Verdict::NoChange => "no change",
            Verdict::Undecided => "undecided",
        }
    }

    /// Whether the verdict says the patch really moved this metric.
    pub fn is_change(self) -> bool {
        matches!(
            self,
            Verdict::Improvement | Verdict::Regression | Verdict::Changed
        )
    }
}

/// Thresholds of the verdict rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VerdictPolicy {
    /// Confidence of the interval (0.95); 1 − confidence is the level the
    /// Mann–Whitney veto uses.
    pub confidence: f64,
    /// Largest Benjamini–Hochberg q-value that counts as significant (0.05).
    pub fdr: f64,
    /// Runs needed on each side before anything is decided (3).
    pub min_runs: usize,
    /// Smallest relative change that matters, in percent, before an A/A
    /// comparison calibrated it (1.0; the measurement mode's default in a
    /// report).
    pub min_change_percent: f64,
    /// Smallest change that matters for percentage metrics, in points (0.1).
    pub min_change_points: f64,
    /// δ in percent as an A/A comparison of this kind of run on this
    /// machine calibrated it, when one did; it replaces
    /// `min_change_percent`, lower or higher.
    pub calibrated_percent: Option<f64>,
}

impl Default for VerdictPolicy {
    fn default() -> Self {
        VerdictPolicy {
            confidence: 0.95,
            fdr: 0.05,
            min_runs: 3,
            min_change_percent: 1.0,
            min_change_points: 0.1,
            calibrated_percent: None,
        }
    }
}

impl VerdictPolicy {
    /// The interval's confidence as reports print it: `95%`, `97.5%`.
    pub fn interval_label(&self) -> String {
        super::looks::percent_label(self.confidence)
    }

    /// δ: the smallest change that matters, in `unit`.
    pub fn threshold(&self, unit: ChangeUnit) -> f64 {
        match unit {
            ChangeUnit::Percent => self.calibrated_percent.unwrap_or(self.min_change_percent),
            ChangeUnit::Points => self.min_change_points,
        }
    }
}

/// What the verdict rule looks at for one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    /// Which way is better.
    pub direction: Direction,
    /// Percent or points.
    pub unit: ChangeUnit,
    /// Runs with a value, base side.
    pub base_runs: usize,
    /// Runs with a value, patched side.
    pub patched_runs: usize,
    /// The change of the means, in `unit`.
    pub change: Option<f64>,
    /// Its confidence interval.
    pub interval: Option<Interval>,
    /// Benjamini–Hochberg q-value of Welch's p.
    pub q: Option<f64>,
    /// The Mann–Whitney test.
    pub mann_whitney: Option<MannWhitney>,
}

/// A verdict and the sentence that explains it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one sentence fragment ("95% CI +1.1% … +2.0% excludes 0, q = 0.003").
    pub reason: String,
    /// A no change that is real all the same: significant, but the whole
    /// interval lies within ±δ.
    pub real_below_delta: bool,
}

/// `real (q 0.0035) but below this machine's δ of 3.3%`: what a no change
/// that is significant all the same is (δ calibrated by the machine's A/A
/// comparison, or the mode's default δ).
pub fn below_delta_words(q: f64, policy: &VerdictPolicy, unit: ChangeUnit) -> String {
    let whose = match (unit, policy.calibrated_percent) {
        (ChangeUnit::Percent, Some(_)) => "this machine's δ",
        _ => "the default δ",
    };
    let suffix = match unit {
        ChangeUnit::Percent => "%",
        ChangeUnit::Points => " points",
    };
    format!(
        "real (q {}) but below {whose} of {}{suffix}",
        fmt_p(q),
        delta_text(policy.threshold(unit))
    )
}

/// Applies the rule in the module documentation.
pub fn judge(e: &Evidence, policy: &VerdictPolicy) -> Judgement {
    let undecided = |reason: String| Judgement {
        verdict: Verdict::Undecided,
        reason,
        real_below_delta: false,
    };
    let unit = e.unit.suffix();
    let delta = policy.threshold(e.unit);
    let shown = delta_text(delta);
    if e.base_runs < policy.min_runs || e.patched_runs < policy.min_runs {
        return undecided(format!(
            "too few runs ({} base, {} patched; {} a side needed)",
            e.base_runs, e.patched_runs, policy.min_runs
        ));
    }
    let Some(change) = e.change else {
        return undecided("relative change undefined: the base mean is 0".into());
    };
    let Some(interval @ Interval::Bounded { low, high }) = e.interval else {
        return undecided("interval unbounded: the base mean is too uncertain".into());
    };
    let (a, b) = super::interval::ends_text(low, high, 2);
    let ci = format!("{} CI {a}{unit} … {b}{unit}", policy.interval_label());
    let q = e.q.unwrap_or(1.0);
    let significant = q <= policy.fdr && interval.excludes_zero();
    if interval.within(delta) {
        return if significant {
            Judgement {
                verdict: Verdict::NoChange,
                reason: format!(
                    "{}: {ci} lies within ±{shown}{unit}",
                    below_delta_words(q, policy, e.unit)
                ),
                real_below_delta: true,
            }
        } else {
            Judgement {
                verdict: Verdict::NoChange,
                reason: format!("{ci} lies within ±{shown}{unit}"),
                real_below_delta: false,
            }
        };
    }
    if significant && change.abs() >= delta {
        let alpha = 1.0 - policy.confidence;
        if let Some(mw) = e.mann_whitney {
            if mw.min_attainable_p <= alpha && mw.p > alpha {
                return undecided(format!(
                    "{ci}, q = {}, but Mann–Whitney p = {} disagrees",
                    fmt_p(q),
                    fmt_p(mw.p)
                ));
            }
        }
        let verdict = match (e.direction, change > 0.0) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Improvement
            }
            (Direction::HigherIsBetter, false) | (Direction::LowerIsBetter, true) => {
                Verdict::Regression
            }
            (Direction::Neutral, _) => Verdict::Changed,
        };
        return Judgement {
            verdict,
            reason: format!("{ci} excludes 0, q = {}", fmt_p(q)),
            real_below_delta: false,
        };
    }
    if significant {
        undecided(format!(
            "{ci}, q = {}: real but smaller than ±{shown}{unit}, and the interval \
             does not rule out ±{shown}{unit}",
            fmt_p(q)
        ))
    } else {
        undecided(format!(
            "{ci}, q = {}: too wide to tell a ±{shown}{unit} change from none",
            fmt_p(q)
        ))
    }
}

/// δ as reports print it: two decimals at most, no trailing zeros (`1`,
/// `0.5`, `0.15` for a calibrated 0.1476…).
pub fn delta_text(delta: f64) -> String {
    let text = format!("{delta:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A p- or q-value with two significant digits: `0.031`, `0.5`, `1`, and
/// below 0.001 in exponent form, `2.1e-4`.
pub fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        return "0".into();
    }
    if p < 0.001 {
        return format!("{p:.1e}");
    }
    let decimals = (1 - p.log10().floor() as i32).max(0) as usize;
    let s = format!("{p:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(change: f64, low: f64, high: f64, q: f64) -> Evidence {
        Evidence {
            direction: Direction::HigherIsBetter,
            unit: ChangeUnit::Percent,
            base_runs: 3,
            patched_runs: 3,
            change: Some(change),
            interval: Some(Interval::Bounded { low, high }),
            q: Some(q),
            mann_whitney: None,
        }
    }

    #[test]
    fn a_significant_gain_of_ops_is_an_improvement() {
        let j = judge(&evidence(5.0, 3.0, 7.0, 0.001), &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::Improvement);
        assert_eq!(j.reason, "95% CI +3.00% … +7.00% excludes 0, q = 0.001");
    }

    #[test]
    fn direction_decides_good_or_bad() {
        let mut e = evidence(5.0, 3.0, 7.0, 0.001);
        e.direction = Direction::LowerIsBetter; // e.g. path-length grew 5%
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Regression
        );
        e.direction = Direction::Neutral;
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Changed
        );
        let mut e = evidence(-5.0, -7.0, -3.0, 0.001);
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Regression
        );
        e.direction = Direction::LowerIsBetter;
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Improvement
        );
    }

    #[test]
    fn a_narrow_interval_around_zero_is_no_change() {
        let j = judge(&evidence(0.1, -0.4, 0.6, 0.7), &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::NoChange);
        assert_eq!(j.reason, "95% CI -0.40% … +0.60% lies within ±1%");
        assert!(!j.real_below_delta);
        // a real but tiny change is no change too, and says it is real
        let j = judge(&evidence(0.3, 0.1, 0.5, 0.001), &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::NoChange);
        assert!(j.real_below_delta);
        assert_eq!(
            j.reason,
            "real (q 0.001) but below the default δ of 1%: 95% CI +0.10% … +0.50% lies within ±1%"
        );
    }

    #[test]
    fn a_real_change_below_a_calibrated_delta_names_the_machine() {
        // The review's case: −1.7% (95% −2.52 … −0.97%), q 0.0035, δ 3.3%
        // from a short A/A.
        let policy = VerdictPolicy {
            calibrated_percent: Some(3.3),
            ..VerdictPolicy::default()
        };
        let j = judge(&evidence(-1.7, -2.52, -0.97, 0.0035), &policy);
        assert_eq!(j.verdict, Verdict::NoChange);
        assert!(j.real_below_delta);
        assert!(
            j.reason
                .starts_with("real (q 0.0035) but below this machine's δ of 3.3%: 95% CI"),
            "{}",
            j.reason
        );
        // Not significant after false-discovery control: a plain no change.
        let j = judge(&evidence(-1.7, -2.52, -0.97, 0.2), &policy);
        assert_eq!((j.verdict, j.real_below_delta), (Verdict::NoChange, false));
        // Points: the default δ of 0.1 points.
        let mut e = evidence(0.05, 0.02, 0.08, 0.001);
        e.unit = ChangeUnit::Points;
        assert!(
            judge(&e, &policy)
                .reason
                .starts_with("real (q 0.001) but below the default δ of 0.1 points"),
        );
    }

    #[test]
    fn a_wide_interval_is_undecided() {
        let j = judge(
            &evidence(20.0, -2.66, 49.16, 0.07),
            &VerdictPolicy::default(),
        );
        assert_eq!(j.verdict, Verdict::Undecided);
        assert!(j.reason.contains("too wide"), "{}", j.reason);
        // significant but smaller than δ with an interval reaching past δ
        let j = judge(&evidence(0.8, 0.2, 1.4, 0.01), &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::Undecided);
        assert!(j.reason.contains("smaller than ±1%"), "{}", j.reason);
    }

    #[test]
    fn false_discovery_control_can_overrule_a_bare_interval() {
        // the interval excludes 0, but after BH the q-value is 0.2
        let j = judge(&evidence(5.0, 1.0, 9.0, 0.2), &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::Undecided);
    }

    #[test]
    fn too_few_runs() {
        let mut e = evidence(5.0, 3.0, 7.0, 0.001);
        e.patched_runs = 2;
        let j = judge(&e, &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::Undecided);
        assert_eq!(
            j.reason,
            "too few runs (3 base, 2 patched; 3 a side needed)"
        );
    }

    #[test]
    fn unbounded_or_undefined_changes_are_undecided() {
        let mut e = evidence(5.0, 3.0, 7.0, 0.001);
        e.interval = Some(Interval::Unbounded);
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Undecided
        );
        e.change = None;
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Undecided
        );
    }

    #[test]
    fn delta_is_printed_with_the_digits_it_needs() {
        assert_eq!(delta_text(1.0), "1");
        assert_eq!(delta_text(0.5), "0.5");
        assert_eq!(delta_text(0.14763027955053687), "0.15");
    }

    #[test]
    fn a_calibration_replaces_the_threshold_both_ways() {
        let policy = VerdictPolicy {
            calibrated_percent: Some(3.0),
            ..VerdictPolicy::default()
        };
        assert_eq!(policy.threshold(ChangeUnit::Percent), 3.0);
        assert_eq!(policy.threshold(ChangeUnit::Points), 0.1);
        // +2% [1.5, 2.5] is a change under the default 1% but no change under a 3% floor
        let e = evidence(2.0, 1.5, 2.5, 0.001);
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Improvement
        );
        assert_eq!(judge(&e, &policy).verdict, Verdict::NoChange);
        // +0.8% [0.7, 0.9]: no change under the default 1%, an improvement
        // once calibrated to 0.2%.
        let small = evidence(0.8, 0.7, 0.9, 0.001);
        assert_eq!(
            judge(&small, &VerdictPolicy::default()).verdict,
            Verdict::NoChange
        );
        let quiet = VerdictPolicy {
            calibrated_percent: Some(0.2),
            ..VerdictPolicy::default()
        };
        assert_eq!(quiet.threshold(ChangeUnit::Percent), 0.2);
        assert_eq!(judge(&small, &quiet).verdict, Verdict::Improvement);
    }

    #[test]
    fn mann_whitney_vetoes_only_when_it_could_have_agreed() {
        let mut e = evidence(5.0, 3.0, 7.0, 0.001);
        // 3 + 3 runs: MW's best p is 0.1, it cannot veto
        e.mann_whitney = Some(MannWhitney {
            u: 0.0,
            p: 0.1,
            exact: true,
            min_attainable_p: 0.1,
        });
        assert_eq!(
            judge(&e, &VerdictPolicy::default()).verdict,
            Verdict::Improvement
        );
        // 5 + 5 runs with overlapping ranks: MW could reach 0.008 but says 0.15
        e.mann_whitney = Some(MannWhitney {
            u: 6.0,
            p: 0.15,
            exact: true,
            min_attainable_p: 2.0 / 252.0,
        });
        let j = judge(&e, &VerdictPolicy::default());
        assert_eq!(j.verdict, Verdict::Undecided);
        assert!(
            j.reason.contains("Mann–Whitney p = 0.15 disagrees"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn p_values_print_with_two_significant_digits() {
        assert_eq!(fmt_p(0.0), "0");
        assert_eq!(fmt_p(0.031_41), "0.031");
        assert_eq!(fmt_p(0.5), "0.5");
        assert_eq!(fmt_p(1.0), "1");
        assert_eq!(fmt_p(0.001), "0.001");
        assert_eq!(fmt_p(0.000_213), "2.1e-4");
    }
}
