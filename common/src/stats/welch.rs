//! Welch's t-test for a difference of means without assuming equal
//! variances, with Welch–Satterthwaite degrees of freedom. Benchmark means
//! over many seconds are close to normal; the exact Mann–Whitney test
//! (`mann_whitney`) is the distribution-free cross-check.

use serde::{Deserialize, Serialize};

use super::distribution::t_two_sided_p;
use super::summary::{mean, sample_variance};

/// The result of Welch's t-test, patched minus base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WelchTest {
    /// mean(patched) − mean(base).
    pub difference: f64,
    /// √(s_b²/n_b + s_p²/n_p).
    pub standard_error: f64,
    /// difference ÷ standard error; `None` when the standard error is 0
    /// (both sides constant), where the difference is exact.
    pub t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom (n_b + n_p − 2 when both
    /// sides are constant and the formula is 0/0).
    pub df: f64,
    /// Two-sided p-value: 1 for identical constant sides, 0 for different
    /// constant sides.
    pub p: f64,
}

/// Welch's t-test; `None` unless both sides have at least two runs.
pub fn welch_test(base: &[f64], patched: &[f64]) -> Option<WelchTest> {
    let (nb, np) = (base.len() as f64, patched.len() as f64);
    let wb = sample_variance(base)? / nb;
    let wp = sample_variance(patched)? / np;
    let difference = mean(patched)? - mean(base)?;
    let se2 = wb + wp;
    if se2 == 0.0 {
        return Some(WelchTest {
            difference,
            standard_error: 0.0,
            t: None,
            df: nb + np - 2.0,
            p: if difference == 0.0 { 1.0 } else { 0.0 },
        });
    }
    let df = welch_satterthwaite(wb, nb, wp, np);
    let se = se2.sqrt();
    let t = difference / se;
    Some(WelchTest {
        difference,
        standard_error: se,
        t: Some(t),
        df,
        p: t_two_sided_p(t, df),
    })
}

/// ν = (w_b + w_p)² / (w_b²/(n_b − 1) + w_p²/(n_p − 1)) with w = s²/n, the
/// degrees of freedom of a sum of two independent variance estimates.
pub(crate) fn welch_satterthwaite(wb: f64, nb: f64, wp: f64, np: f64) -> f64 {
    (wb + wp).powi(2) / (wb * wb / (nb - 1.0) + wp * wp / (np - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_spreads() {
        // base 1, 2, 3 and patched 4, 5, 6: means 2 and 5, sample variances 1 and 1.
        // se² = 1/3 + 1/3 = 2/3 → se = 0.816497; t = 3 / 0.816497 = 3.674235;
        // ν = (2/3)² / ((1/3)²/2 + (1/3)²/2) = (4/9) / (1/9) = 4.
        // df 4: p = 1 − 1.5u + 0.5u³ with u = t/√(4 + t²) = √(13.5/17.5) = 0.878310,
        //   u³ = 0.677553 → 1 − 1.317465 + 0.338777 = 0.021312
        let w = welch_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(w.difference, 3.0);
        assert!((w.t.unwrap() - 3.674_234_614_174_767).abs() < 1e-12);
        assert!((w.df - 4.0).abs() < 1e-12);
        assert!((w.p - 0.021_311_641_128_756_7).abs() < 1e-12);
    }

    #[test]
    fn unequal_spreads_and_sizes() {
        // base 10, 12, 14, 16: mean 13, s² = (9+1+1+9)/3 = 20/3, w_b = 20/12 = 5/3
        // patched 20, 21, 22: mean 21, s² = 1, w_p = 1/3
        // se² = 2 → t = 8/√2 = 5.656854; ν = 4 / ((25/9)/3 + (1/9)/2) = 4 / (0.925926
        //   + 0.055556) = 4.075472; p = 0.0045488 (scipy's ttest_ind agrees)
        let w = welch_test(&[10.0, 12.0, 14.0, 16.0], &[20.0, 21.0, 22.0]).unwrap();
        assert!((w.t.unwrap() - 5.656_854_249_492_381).abs() < 1e-12);
        assert!((w.df - 4.075_471_698_113_207).abs() < 1e-12);
        assert!((w.p - 0.004_548_830_829_996_6).abs() < 1e-10);
    }

    #[test]
    fn one_run_on_a_side_is_no_test() {
        assert!(welch_test(&[1.0], &[4.0, 5.0, 6.0]).is_none());
        assert!(welch_test(&[1.0, 2.0], &[]).is_none());
    }

    #[test]
    fn identical_constant_sides() {
        let w = welch_test(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((w.t, w.p, w.df, w.difference), (None, 1.0, 4.0, 0.0));
    }

    #[test]
    fn different_constant_sides_differ_exactly() {
        // -icount runs are deterministic: 100, 100, 100 vs 90, 90, 90
        let w = welch_test(&[100.0; 3], &[90.0; 3]).unwrap();
        assert_eq!((w.t, w.p, w.difference), (None, 0.0, -10.0));
    }

    #[test]
    fn one_constant_side_takes_the_other_sides_df() {
        // w_b = 0 → ν = w_p² / (w_p²/(n_p − 1)) = n_p − 1 = 2
        let w = welch_test(&[7.0, 7.0, 7.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((w.df - 2.0).abs() < 1e-12);
        assert!(w.p.is_finite());
    }
}
