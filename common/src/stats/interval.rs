//! Confidence intervals for the `%change` column.
//!
//! For relative changes we use **Fieller's theorem** for the ratio of the two
//! means, with Welch–Satterthwaite degrees of freedom. We prefer it to a
//! bootstrap because comparisons have 3–10 runs a side: a bootstrap of 3
//! values has only 10 distinct resamples and its percentile interval is far
//! too narrow, and resampling would make reports depend on a random seed.
//! Fieller is deterministic, exact under normal run means, agrees with the
//! Welch test, and, honestly, becomes unbounded when the base mean itself is
//! not clearly away from zero (then no relative change can be stated).
//!
//! For metrics that are percentages (changes in points) the interval is the
//! Welch interval for the difference of means.

use serde::{Deserialize, Serialize};

use super::change::ChangeUnit;
use super::distribution::t_critical;
use super::summary::{mean, sample_variance};
use super::welch::welch_satterthwaite;

/// A confidence interval for a change, in the change's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Interval {
    /// The change lies in [low, high] at the stated confidence.
    Bounded {
        /// Lower end.
        low: f64,
        /// Upper end.
        high: f64,
    },
    /// The data cannot bound the change (Fieller with a base mean that is
    /// not clearly away from zero).
    Unbounded,
}

impl Interval {
    /// The interval lies entirely above or entirely below zero.
    pub fn excludes_zero(&self) -> bool {
        match *self {
            Interval::Bounded { low, high } => low > 0.0 || high < 0.0,
            Interval::Unbounded => false,
        }
    }

    /// The interval lies strictly inside (−delta, +delta).
    pub fn within(&self, delta: f64) -> bool {
        match *self {
            Interval::Bounded { low, high } => low > -delta && high < delta,
            Interval::Unbounded => false,
        }
    }
}

/// Most decimals [`ends_text`] writes.
const MAX_DECIMALS: usize = 6;

/// The two ends of an interval as reports print them, signed (`-2.53`,
/// `-2.47`): `decimals` after the point, and more (up to 6) while two ends
/// that differ would read the same, so that an interval never reads as a
/// single value it is not (`[-2.5%, -2.5%]`). Ends that agree to 6
/// decimals are one value: said with `decimals`.
pub fn ends_text(low: f64, high: f64, decimals: usize) -> (String, String) {
    let at = |d: usize| (format!("{low:+.d$}"), format!("{high:+.d$}"));
    (decimals..=MAX_DECIMALS.max(decimals))
        .map(at)
        .find(|(a, b)| a != b)
        .unwrap_or_else(|| at(decimals))
}

/// The `confidence` (e.g. 0.95) interval for the change from base to patched
/// in `unit`; `None` unless both sides have at least two runs.
pub fn change_interval(
    unit: ChangeUnit,
    base: &[f64],
    patched: &[f64],
    confidence: f64,
) -> Option<Interval> {
    let (nb, np) = (base.len() as f64, patched.len() as f64);
    let wb = sample_variance(base)? / nb;
    let wp = sample_variance(patched)? / np;
    let (mb, mp) = (mean(base)?, mean(patched)?);
    let alpha = 1.0 - confidence;
    match unit {
        ChangeUnit::Points => {
            let d = mp - mb;
            if wb + wp == 0.0 {
                return Some(Interval::Bounded { low: d, high: d });
            }
            let t = t_critical(alpha, welch_satterthwaite(wb, nb, wp, np));
            let half = t * (wb + wp).sqrt();
            Some(Interval::Bounded {
                low: d - half,
                high: d + half,
            })
        }
        ChangeUnit::Percent => Some(fieller_percent(mb, wb, nb, mp, wp, np, alpha)),
    }
}

/// Fieller's interval for ρ = μ_p/μ_b, as a percent change 100 (ρ − 1).
///
/// The set of ρ with (m_p − ρ m_b)² ≤ t² (w_p + ρ² w_b) is the quadratic
/// a ρ² − 2 m_p m_b ρ + (m_p² − t² w_p) ≤ 0 with a = m_b² − t² w_b; for a > 0
/// it is the interval between the roots (m_p m_b ± √D) / a with
/// D = t² (w_p a + m_p² w_b); for a ≤ 0 it is unbounded.
fn fieller_percent(mb: f64, wb: f64, nb: f64, mp: f64, wp: f64, np: f64, alpha: f64) -> Interval {
    if mb == 0.0 {
        return Interval::Unbounded;
    }
    if wb + wp == 0.0 {
        let c = 100.0 * (mp - mb) / mb;
        return Interval::Bounded { low: c, high: c };
    }
    let r = mp / mb;
    // The variance of m_p − ρ m_b at ρ = r is w_p + r² w_b; its degrees of
    // freedom follow Welch–Satterthwaite with those weights.
    let (vb, vp) = (r * r * wb, wp);
    let df = if vb + vp == 0.0 {
        nb + np - 2.0
    } else {
        welch_satterthwaite(vb, nb, vp, np)
    };
    let t = t_critical(alpha, df);
    let a = mb * mb - t * t * wb;
    if a <= 0.0 {
        return Interval::Unbounded;
    }
    let d = t * t * (wp * a + mp * mp * wb);
    let sqrt_d = d.max(0.0).sqrt();
    let low = (mp * mb - sqrt_d) / a;
    let high = (mp * mb + sqrt_d) / a;
    Interval::Bounded {
        low: 100.0 * (low - 1.0),
        high: 100.0 * (high - 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_that_differ_never_read_the_same() {
        let ends = |low, high, d| {
            let (a, b) = ends_text(low, high, d);
            format!("[{a}, {b}]")
        };
        assert_eq!(ends(-2.53, -2.47, 1), "[-2.53, -2.47]");
        assert_eq!(ends(48.1, 51.9, 1), "[+48.1, +51.9]");
        assert_eq!(ends(-0.2912, -0.2874, 2), "[-0.291, -0.287]");
        // Ends equal to 6 decimals are said as one value.
        assert_eq!(ends(10.0, 10.0, 2), "[+10.00, +10.00]");
        assert_eq!(ends(1.0, 1.0 + 1e-12, 2), "[+1.00, +1.00]");
    }

    fn bounds(i: Interval) -> (f64, f64) {
        match i {
            Interval::Bounded { low, high } => (low, high),
            Interval::Unbounded => panic!("unbounded"),
        }
    }

    #[test]
    fn fieller_for_a_twenty_percent_change_of_three_runs() {
        // base 9, 10, 11: m_b = 10, w_b = 1/3; patched 11, 12, 13: m_p = 12, w_p = 1/3.
        // r = 1.2; df = (1.44/3 + 1/3)² / ((0.48)²/2 + (1/3)²/2) = 0.661511/0.170756
        //   = 3.874024; t*(0.975, 3.874024) = 2.812417.
        // a = 100 − 7.909688/3 = 97.363437; D = 7.909688 · (97.363437/3 + 144/3)
        //   = 636.369803; roots (120 ∓ 25.226374) / 97.363437 = 0.973401, 1.491590
        //   → [−2.6599%, +49.1590%]: the interval is asymmetric around +20%.
        let (low, high) = bounds(
            change_interval(
                ChangeUnit::Percent,
                &[9.0, 10.0, 11.0],
                &[11.0, 12.0, 13.0],
                0.95,
            )
            .unwrap(),
        );
        assert!((low + 2.659_939_588_234_838_7).abs() < 1e-8, "{low}");
        assert!((high - 49.159_042_653_632_25).abs() < 1e-8, "{high}");
    }

    #[test]
    fn difference_interval_for_points() {
        // base 1, 2, 3 and patched 4, 5, 6: d = 3, se = √(2/3) = 0.816497, df 4,
        // t* = 2.776445 → ± 2.266958 → [0.733042, 5.266958]
        let (low, high) = bounds(
            change_interval(ChangeUnit::Points, &[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95).unwrap(),
        );
        assert!((low - 0.733_042_064_472_480_9).abs() < 1e-9);
        assert!((high - 5.266_957_935_527_519).abs() < 1e-9);
    }

    #[test]
    fn constant_sides_give_a_point_interval() {
        let i = change_interval(ChangeUnit::Percent, &[10.0; 3], &[12.0; 3], 0.95).unwrap();
        let (low, high) = bounds(i);
        assert!((low - 20.0).abs() < 1e-12 && (high - 20.0).abs() < 1e-12);
        let i = change_interval(ChangeUnit::Percent, &[10.0; 3], &[10.0; 3], 0.95).unwrap();
        assert_eq!(
            i,
            Interval::Bounded {
                low: 0.0,
                high: 0.0
            }
        );
        assert!(i.within(1.0) && !i.excludes_zero());
    }

    #[test]
    fn a_base_mean_not_clearly_above_zero_gives_no_bound() {
        // base 1, 10, 19: m_b = 10, w_b = 81/3 = 27; a = 100 − t²·27 < 0 for any t > 1.93
        let i = change_interval(
            ChangeUnit::Percent,
            &[1.0, 10.0, 19.0],
            &[11.0, 12.0, 13.0],
            0.95,
        );
        assert_eq!(i, Some(Interval::Unbounded));
        let i = change_interval(
            ChangeUnit::Percent,
            &[-1.0, 0.0, 1.0],
            &[1.0, 2.0, 3.0],
            0.95,
        );
        assert_eq!(i, Some(Interval::Unbounded));
    }

    #[test]
    fn one_run_gives_no_interval() {
        assert!(change_interval(ChangeUnit::Percent, &[10.0], &[12.0, 13.0], 0.95).is_none());
    }

    #[test]
    fn excludes_zero_and_within() {
        let i = Interval::Bounded {
            low: 0.5,
            high: 2.0,
        };
        assert!(i.excludes_zero() && !i.within(1.0) && i.within(2.5));
        let i = Interval::Bounded {
            low: -0.5,
            high: 0.5,
        };
        assert!(!i.excludes_zero() && i.within(1.0));
        assert!(!Interval::Unbounded.excludes_zero() && !Interval::Unbounded.within(1e9));
    }
}
