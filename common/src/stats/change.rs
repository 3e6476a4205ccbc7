//! The `%change` column: relative change of the means in percent, or, for
//! metrics that are themselves percentages (perf-profile, names ending in
//! `%`), the difference in percentage points, as 0-day prints them.

use serde::{Deserialize, Serialize};

use crate::metric::is_percentage;

/// What a change is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeUnit {
    /// 100 · (patched − base) / base.
    Percent,
    /// patched − base, for metrics that are percentages already.
    Points,
}

impl ChangeUnit {
    /// The unit `%change` uses for this metric.
    pub fn for_metric(name: &str) -> Self {
        if is_percentage(name) {
            ChangeUnit::Points
        } else {
            ChangeUnit::Percent
        }
    }

    /// Suffix for printing a change: `%` or ` points`.
    pub fn suffix(self) -> &'static str {
        match self {
            ChangeUnit::Percent => "%",
            ChangeUnit::Points => " points",
        }
    }
}

/// The change from `base` to `patched` in `unit`; `None` for a relative
/// change from a zero base (0-day divides by 1e-100 there and prints a
/// meaningless huge number; we say it is undefined).
pub fn change(unit: ChangeUnit, base: f64, patched: f64) -> Option<f64> {
    match unit {
        ChangeUnit::Points => Some(patched - base),
        ChangeUnit::Percent if base == 0.0 => None,
        ChangeUnit::Percent => Some(100.0 * (patched - base) / base),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_change_in_percent() {
        // seed 004: 3436082 → 3477810: 41728 / 3436082 = 1.2144064% → `+1.2%`
        let c = change(ChangeUnit::Percent, 3_436_082.0, 3_477_810.0).unwrap();
        assert!((c - 1.214_406_4).abs() < 1e-6);
        // a halving is −50%
        assert_eq!(change(ChangeUnit::Percent, 8.0, 4.0), Some(-50.0));
    }

    #[test]
    fn percentages_change_in_points() {
        assert_eq!(
            ChangeUnit::for_metric("perf-profile.self.cycles-pp.alloc_fd"),
            ChangeUnit::Points
        );
        assert_eq!(
            ChangeUnit::for_metric("perf-stat.i.branch-miss-rate%"),
            ChangeUnit::Points
        );
        assert_eq!(
            ChangeUnit::for_metric("will-it-scale.per_process_ops"),
            ChangeUnit::Percent
        );
        // seed 004: alloc_fd 6.48 → 5.90 is −0.58 points, printed `-0.6`
        let c = change(ChangeUnit::Points, 6.48, 5.90).unwrap();
        assert!((c + 0.58).abs() < 1e-12);
    }

    #[test]
    fn relative_change_from_zero_is_undefined() {
        assert_eq!(change(ChangeUnit::Percent, 0.0, 5.0), None);
        assert_eq!(change(ChangeUnit::Points, 0.0, 0.07), Some(0.07));
    }
}
