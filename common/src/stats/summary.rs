//! Location and spread of one side's runs, computed the way 0-day's compare
//! computes them, so our table shows the same numbers for the same runs.

/// Arithmetic mean, summed left to right; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Population standard deviation (n in the denominator), as 0-day prints it;
/// `None` for fewer than two values (0-day shows no `±` then).
pub fn population_stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let squares: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
    Some((squares / values.len() as f64).sqrt())
}

/// Unbiased sample variance (n − 1 in the denominator), the estimate the
/// t-test and the confidence interval need; `None` for fewer than two values.
pub fn sample_variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let squares: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
    Some(squares / (values.len() - 1) as f64)
}

/// 0-day's `%stddev`: population stddev ÷ |mean| × 100. `None` for fewer
/// than two values or a zero mean (0-day then prints the raw stddev instead,
/// which reads as a percentage and is meaningless; we print nothing).
pub fn stddev_percent(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let sd = population_stddev(values)?;
    if m == 0.0 {
        return None;
    }
    Some(100.0 * sd / m.abs())
}

/// The `± N%` 0-day prints: the `%stddev` truncated to a whole percent, and
/// only when it exceeds 2% (so a 2.9% spread prints as `±  2%`, as in the
/// seed report's `21.50 ±  2%`).
pub fn shown_stddev_percent(values: &[f64]) -> Option<u32> {
    let pct = stddev_percent(values)?;
    // `as` truncates towards zero, like Ruby's `%d` of a Float.
    (pct > 2.0).then_some(pct as u32)
}

/// The 95% confidence interval of the mean of `values` (Student's t with
/// n − 1 degrees of freedom): what a history point says of its commit.
/// `None` for fewer than two values or non-finite ones.
pub fn mean_interval(values: &[f64]) -> Option<(f64, f64)> {
    let m = mean(values)?;
    let var = sample_variance(values)?;
    let n = values.len() as f64;
    let half = super::distribution::t_critical(0.05, n - 1.0) * (var / n).sqrt();
    (m.is_finite() && half.is_finite()).then_some((m - half, m + half))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_of_a_mean_is_students() {
        // 1, 2, 3: mean 2, s = 1, t(0.975, 2) = 4.302653: 2 ± 2.484138.
        let (low, high) = mean_interval(&[1.0, 2.0, 3.0]).unwrap();
        assert!((low - (2.0 - 2.484_138)).abs() < 1e-5, "{low}");
        assert!((high - (2.0 + 2.484_138)).abs() < 1e-5, "{high}");
        assert_eq!(mean_interval(&[5.0]), None);
    }

    #[test]
    fn mean_of_three_runs() {
        // (2 + 4 + 9) / 3 = 15 / 3 = 5
        assert_eq!(mean(&[2.0, 4.0, 9.0]), Some(5.0));
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn population_stddev_divides_by_n() {
        // mean 5; squared deviations 9 + 1 + 16 = 26; 26 / 3 = 8.666…;
        // sqrt = 2.943920288775949
        let sd = population_stddev(&[2.0, 4.0, 9.0]).unwrap();
        assert!((sd - 2.943_920_288_775_949).abs() < 1e-12);
        // the sample variance divides by n − 1: 26 / 2 = 13
        assert_eq!(sample_variance(&[2.0, 4.0, 9.0]), Some(13.0));
    }

    #[test]
    fn one_run_has_no_spread() {
        assert_eq!(population_stddev(&[7.0]), None);
        assert_eq!(sample_variance(&[7.0]), None);
        assert_eq!(stddev_percent(&[7.0]), None);
        assert_eq!(shown_stddev_percent(&[7.0]), None);
    }

    #[test]
    fn stddev_percent_reproduces_the_seed_141_percent() {
        // seed 004 prints `0.02 ±141%` for perf-profile.self.cycles-pp.ktime_get:
        // runs 0, 0, 0.06 → mean 0.02; deviations −0.02, −0.02, 0.04;
        // squares 0.0004 + 0.0004 + 0.0016 = 0.0024; / 3 = 0.0008;
        // sqrt = 0.028284; / 0.02 = 1.41421 → 141% (n − 1 would give 173%).
        assert_eq!(shown_stddev_percent(&[0.0, 0.0, 0.06]), Some(141));
    }

    #[test]
    fn spread_is_shown_only_above_two_percent_and_truncated() {
        // 100 ± d with d = 2.9 * sqrt(3/2): population stddev 2.9 → 2.9% → `±  2%`
        let d = 2.9 * 1.5f64.sqrt();
        assert_eq!(
            shown_stddev_percent(&[100.0 - d, 100.0, 100.0 + d]),
            Some(2)
        );
        // exactly 2%: not shown
        let d = 2.0 * 1.5f64.sqrt();
        let pct = stddev_percent(&[100.0 - d, 100.0, 100.0 + d]).unwrap();
        assert!((pct - 2.0).abs() < 1e-12);
        assert_eq!(shown_stddev_percent(&[99.0, 100.0, 101.0]), None);
    }

    #[test]
    fn zero_mean_has_no_relative_spread() {
        assert_eq!(stddev_percent(&[0.0, 0.0]), None);
        assert_eq!(stddev_percent(&[-1.0, 1.0]), None);
    }
}
