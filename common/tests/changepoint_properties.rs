//! Properties of change-point detection on random histories: it never
//! panics, whatever the runs (empty points, NaN, infinities, huge values,
//! constant runs), and every change point sits on a commit boundary with
//! consistent numbers, an odd point has neighbours; a clean step is found
//! exactly where it is.

use patchperf_common::stats::{ChangePointPolicy, Shift, change_points};
use proptest::prelude::*;

/// A run: mostly ordinary values, sometimes anything an f64 can be.
fn run() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => 900.0..1100.0f64,
        1 => Just(1000.0),
        1 => any::<f64>(),
    ]
}

fn history() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(run(), 0..6), 0..30)
}

fn policy() -> impl Strategy<Value = ChangePointPolicy> {
    (0.0..0.2f64, 0.0..5.0f64, 0..12usize).prop_map(|(alpha, delta, window)| ChangePointPolicy {
        alpha,
        min_change_percent: delta,
        window,
    })
}

proptest! {
    #[test]
    fn change_points_sit_on_commit_boundaries(h in history(), policy in policy()) {
        let found = change_points(&h, &policy);
        let mut previous = 0;
        for c in &found.shifts {
            prop_assert!(c.index > previous && c.index < h.len(), "{c:?}");
            previous = c.index;
            prop_assert_eq!(c.before.end, c.index);
            prop_assert_eq!(c.after.start, c.index);
            prop_assert!(!c.before.is_empty() && !c.after.is_empty() && c.after.end <= h.len());
            prop_assert!(h[c.index].iter().any(|v| v.is_finite()));
            prop_assert!(c.p <= policy.alpha);
            prop_assert!(c.change_percent.abs() >= policy.min_change_percent);
            let up = c.mean_after >= c.mean_before;
            prop_assert_eq!(c.shift, if up { Shift::Up } else { Shift::Down });
        }
        // An odd point is a single point with points on both sides.
        for c in &found.odd {
            prop_assert!(c.index > 0 && c.index + 1 < h.len(), "{c:?}");
            let with_runs = h[c.after.clone()]
                .iter()
                .filter(|p| p.iter().any(|v| v.is_finite()))
                .count();
            prop_assert_eq!(with_runs, 1);
            prop_assert!(!found.shifts.iter().any(|s| s.index == c.index));
        }
    }

    #[test]
    fn a_clean_step_is_found_exactly_there(
        (len, at) in (2..25usize).prop_flat_map(|len| (Just(len), 1..len)),
        step in prop_oneof![-50.0..-1.0f64, 1.0..50.0f64],
        runs in 3..6usize,
        noise in prop::collection::vec(-1.0..1.0f64, 150),
    ) {
        let mut noise = noise.iter().cycle();
        let h: Vec<Vec<f64>> = (0..len)
            .map(|i| {
                let level = if i < at { 1e6 } else { 1e6 * (1.0 + step / 100.0) };
                (0..runs).map(|_| level * (1.0 + 1e-4 * noise.next().unwrap())).collect()
            })
            .collect();
        let found = change_points(&h, &ChangePointPolicy::default());
        prop_assert!(found.odd.is_empty());
        let cps = found.shifts;
        prop_assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![at]);
        prop_assert!((cps[0].change_percent - step).abs() < 0.05);
    }
}
