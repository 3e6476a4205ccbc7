//! 0-day's own rule for "this metric changed", shown beside our verdict for
//! readers who know it. It is a range-separation rule, not a statistical
//! test. Facts from lkp-tests (`lib/stats.rb`, `lib/changed_stat.rb`):
//!
//! - each side's values are sorted and `n >> 5` values are trimmed from each
//!   end (at most 3; at most 1 on the patched side when the base has ≤ 3
//!   runs), so below 32 runs nothing is trimmed;
//! - each side is summarised as min, the middle element `sorted[n / 2]`
//!   (lkp calls it "mean", it is the upper median) and max;
//! - a metric is judged only when at least one side has 3 or more runs;
//! - it changed when one side's range sits above the other's middle and
//!   vice versa: `min_p > mid_b && mid_p > max_b`, or the mirror image;
//! - the ratio of the larger middle to the smaller (capped at 5, and 5 when
//!   the smaller is not positive) must exceed 1.01, except for perf-profile
//!   entries, which 0-day's compare exempts from that filter.
//!
//! 0-day further drops changes of non-"perf" metrics under 5% and applies
//! per-metric thresholds from its `etc/` files; all of our metrics are perf
//! metrics in its sense and we have no such thresholds, so neither applies.

use serde::{Deserialize, Serialize};

/// lkp's `MAX_RATIO`.
const MAX_RATIO: f64 = 5.0;

/// One side as 0-day's rule sees it, after trimming.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RangeSummary {
    /// Smallest kept value.
    pub min: f64,
    /// `sorted[n / 2]` of the kept values.
    pub middle: f64,
    /// Largest kept value.
    pub max: f64,
    /// Values kept after trimming.
    pub kept: usize,
}

/// The outcome of 0-day's rule for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ZeroDayCheck {
    /// The base side.
    pub base: RangeSummary,
    /// The patched side.
    pub patched: RangeSummary,
    /// Larger middle ÷ smaller middle, capped at 5.
    pub ratio: f64,
    /// The ranges are separated as described in the module documentation.
    pub separated: bool,
    /// 0-day would report this metric as changed.
    pub changed: bool,
}

/// Applies 0-day's rule; `None` when 0-day would not judge the metric
/// (a side without values, or fewer than 3 runs on both sides).
pub fn zero_day_check(name: &str, base: &[f64], patched: &[f64]) -> Option<ZeroDayCheck> {
    if base.is_empty() || patched.is_empty() || (base.len() < 3 && patched.len() < 3) {
        return None;
    }
    let base_margin = 3;
    let patched_margin = if base.len() <= 3 { 1 } else { 3 };
    let b = summarise(base, base_margin)?;
    let p = summarise(patched, patched_margin)?;

    let separated =
        (p.min > b.middle && p.middle > b.max) || (b.min > p.middle && b.middle > p.max);
    let (high, low) = if b.middle > p.middle { (b, p) } else { (p, b) };
    let ratio = if low.middle > 0.0 {
        (high.middle / low.middle).min(MAX_RATIO)
    } else {
        MAX_RATIO
    };
    let exempt = name.starts_with("perf-profile.");
    Some(ZeroDayCheck {
        base: b,
        patched: p,
        ratio,
        separated,
        changed: separated && (exempt || ratio > 1.01),
    })
}

/// Sorts, trims `min(n >> 5, max_margin)` values off each end and takes
/// min / middle / max.
fn summarise(values: &[f64], max_margin: usize) -> Option<RangeSummary> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let margin = (sorted.len() >> 5).min(max_margin);
    let kept = &sorted[margin..sorted.len() - margin];
    Some(RangeSummary {
        min: *kept.first()?,
        middle: kept[kept.len() / 2],
        max: *kept.last()?,
        kept: kept.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separated_ranges_are_a_change() {
        // base 10, 11, 12 (middle 11, max 12); patched 13, 14, 15 (min 13, middle 14):
        // 13 > 11 and 14 > 12 → separated; ratio 14 / 11 = 1.2727 > 1.01 → changed
        let c = zero_day_check(
            "will-it-scale.per_process_ops",
            &[12.0, 10.0, 11.0],
            &[15.0, 13.0, 14.0],
        )
        .unwrap();
        assert!(c.separated && c.changed);
        assert_eq!(
            c.base,
            RangeSummary {
                min: 10.0,
                middle: 11.0,
                max: 12.0,
                kept: 3
            }
        );
        assert!((c.ratio - 14.0 / 11.0).abs() < 1e-15);
    }

    #[test]
    fn overlap_beyond_the_middle_is_no_change() {
        // patched min 11.5 > base middle 11, but patched middle 12 is not > base max 12
        let c = zero_day_check(
            "will-it-scale.workload",
            &[10.0, 11.0, 12.0],
            &[11.5, 12.0, 20.0],
        )
        .unwrap();
        assert!(!c.separated && !c.changed);
    }

    #[test]
    fn the_middle_is_the_upper_median_not_the_mean() {
        // base 1, 2, 2, 100: sorted[4 / 2] = 2 (the mean would be 26.25);
        // patched 3, 3, 3: min 3 > middle 2 and middle 3 > max 100? no.
        // mirror: base min 1 > 3? no → not separated.
        let c = zero_day_check("x", &[1.0, 2.0, 2.0, 100.0], &[3.0, 3.0, 3.0]).unwrap();
        assert_eq!(c.base.middle, 2.0);
        assert!(!c.separated);
        // base 1, 2, 3, 4: sorted[2] = 3
        let c = zero_day_check("x", &[4.0, 1.0, 3.0, 2.0], &[9.0, 9.0, 9.0]).unwrap();
        assert_eq!(c.base.middle, 3.0);
    }

    #[test]
    fn a_separation_under_one_percent_is_filtered_except_for_profiles() {
        // middles 1000 and 1005: ratio 1.005 ≤ 1.01
        let base = [999.0, 1000.0, 1001.0];
        let patched = [1004.0, 1005.0, 1006.0];
        let c = zero_day_check("will-it-scale.per_process_ops", &base, &patched).unwrap();
        assert!(c.separated && !c.changed);
        let c = zero_day_check("perf-profile.self.cycles-pp.dup", &base, &patched).unwrap();
        assert!(c.separated && c.changed);
    }

    #[test]
    fn zero_day_needs_three_runs_on_one_side() {
        assert!(zero_day_check("x", &[1.0, 2.0], &[5.0, 6.0]).is_none());
        assert!(zero_day_check("x", &[1.0, 2.0, 3.0], &[5.0]).is_some());
        assert!(zero_day_check("x", &[], &[5.0, 6.0, 7.0]).is_none());
    }

    #[test]
    fn trimming_starts_at_32_runs() {
        // 32 runs: 32 >> 5 = 1 value trimmed from each end.
        let mut base: Vec<f64> = (0..32).map(f64::from).collect();
        base[31] = 1e9; // an outlier that trimming removes
        let c = zero_day_check("x", &base, &[100.0, 101.0, 102.0]).unwrap();
        assert_eq!(c.base.kept, 30);
        assert_eq!((c.base.min, c.base.max), (1.0, 30.0));
        // middle of 1..=30 kept: sorted[15] = 16
        assert_eq!(c.base.middle, 16.0);
        assert!(c.separated);
        // the patched side has only 3 runs: 3 >> 5 = 0, nothing trimmed
        assert_eq!(c.patched.kept, 3);
    }

    #[test]
    fn ratio_is_capped_and_a_zero_base_counts_as_the_cap() {
        let c = zero_day_check("x", &[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(c.ratio, 5.0);
        assert!(c.changed);
        let c = zero_day_check("x", &[1.0, 1.0, 1.0], &[100.0, 100.0, 100.0]).unwrap();
        assert_eq!(c.ratio, 5.0);
    }
}
