//! Repeated looks at one comparison. A comparison submitted with
//! `max_runs` is judged once its boots are in and, while a headline verdict
//! is undecided, again after its boots a side double (3 → 6 → 12 …, at
//! most `max_runs`). Each look is another chance for noise to pass the
//! test, so the level α (1 − 0.95) is spent across the looks that are
//! possible: look k of L gets α/2^k, the last the rest, α/2^(L−1); the
//! levels sum to α, so whatever the looks' dependence, the chance that any
//! of them calls noise real stays at most α (Bonferroni over the looks).
//! Early looks get the larger share: most comparisons decide there. A
//! comparison without `max_runs` has one look at the full α.

/// How many looks a comparison starting at `first_runs` a side that
/// doubles up to `max_runs` can take.
pub fn looks(first_runs: u32, max_runs: Option<u32>) -> u32 {
    let Some(max) = max_runs else {
        return 1;
    };
    let (mut runs, mut looks) = (first_runs.max(1), 1);
    while runs < max {
        runs = runs.saturating_mul(2).min(max);
        looks += 1;
    }
    looks
}

/// The level look `look` (from 1) of `looks` spends out of `alpha`.
pub fn alpha_at(alpha: f64, look: u32, looks: u32) -> f64 {
    let look = look.clamp(1, looks.max(1));
    let exponent = if look == looks { look - 1 } else { look };
    alpha / 2f64.powi(i32::try_from(exponent).unwrap_or(i32::MAX))
}

/// A confidence as a percentage with the digits it needs: `95%`,
/// `97.5%`, `98.75%`.
pub fn percent_label(confidence: f64) -> String {
    let text = format!("{:.4}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// A level or q bound with the digits it needs: `0.05`, `0.0125`.
pub fn level_label(level: f64) -> String {
    let text = format!("{level:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_from_3_to_24_is_four_looks_whose_levels_sum_to_alpha() {
        assert_eq!(looks(3, None), 1);
        assert_eq!(looks(3, Some(3)), 1);
        assert_eq!(looks(3, Some(6)), 2);
        assert_eq!(looks(3, Some(10)), 3); // 3, 6, 10
        assert_eq!(looks(3, Some(24)), 4); // 3, 6, 12, 24
        let levels: Vec<f64> = (1..=4).map(|k| alpha_at(0.05, k, 4)).collect();
        assert_eq!(levels, [0.025, 0.0125, 0.00625, 0.00625]);
        assert!((levels.iter().sum::<f64>() - 0.05).abs() < 1e-15);
        assert_eq!(alpha_at(0.05, 1, 1), 0.05);
        assert_eq!(alpha_at(0.05, 2, 2), 0.025);
        // A look past the last (more boots than planned) gets the last's.
        assert_eq!(alpha_at(0.05, 9, 2), 0.025);
    }

    #[test]
    fn labels_carry_the_digits_they_need() {
        assert_eq!(percent_label(0.95), "95%");
        assert_eq!(percent_label(1.0 - 0.025), "97.5%");
        assert_eq!(percent_label(1.0 - 0.0125), "98.75%");
        assert_eq!(percent_label(1.0 - 0.00625), "99.375%");
        assert_eq!(level_label(0.05 * 0.0125 / 0.05), "0.0125");
        assert_eq!(level_label(0.05), "0.05");
    }
}
