//! Benjamini–Hochberg false-discovery control across all metrics of one
//! report: a report tests dozens of metrics at once, and at p < 0.05 one in
//! twenty unchanged metrics would look changed. q-values fix that.

/// Benjamini–Hochberg q-values, in the order of `p`: q_(i) = min over j ≥ i
/// of m·p_(j)/j for the p-values sorted ascending, capped at 1. Declaring
/// every metric with q ≤ 0.05 changed keeps the expected share of false
/// discoveries among them at 5%.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut q = vec![0.0; m];
    let mut running_min = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        let scaled = p[i] * m as f64 / (rank + 1) as f64;
        running_min = running_min.min(scaled);
        q[i] = running_min;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_by_hand() {
        // p = 0.01, 0.04, 0.03, 0.20 (m = 4). Sorted: 0.01 (1), 0.03 (2), 0.04 (3), 0.20 (4).
        // m·p/rank: 0.04, 0.06, 0.05333, 0.20. Running minimum from the top:
        // rank 4: 0.20; rank 3: 0.05333; rank 2: min(0.06, 0.05333) = 0.05333;
        // rank 1: min(0.04, 0.05333) = 0.04.
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.20]);
        let expected = [0.04, 0.16 / 3.0, 0.16 / 3.0, 0.20];
        for (got, want) in q.iter().zip(expected) {
            assert!((got - want).abs() < 1e-15, "{q:?}");
        }
    }

    #[test]
    fn q_never_exceeds_one_and_a_single_test_is_unchanged() {
        assert_eq!(benjamini_hochberg(&[0.9, 0.95]), vec![0.95, 0.95]);
        assert_eq!(benjamini_hochberg(&[0.03]), vec![0.03]);
        assert!(benjamini_hochberg(&[]).is_empty());
        // 0.6 · 2 / 1 = 1.2 would exceed 1; the running minimum starts at 1
        assert_eq!(benjamini_hochberg(&[0.6, 1.0]), vec![1.0, 1.0]);
    }

    #[test]
    fn exact_zero_p_values_stay_zero() {
        // -icount runs with different constants have p = 0
        assert_eq!(benjamini_hochberg(&[0.0, 0.5]), vec![0.0, 0.5]);
    }
}
