//! The exact null distribution of a rank sum: in how many ways `m` of the
//! pooled runs' doubled mid-ranks add up to each total. It depends only on
//! how many runs there are and how they tie (the sizes of the tie groups in
//! rank order), not on the values, so it is computed once per pattern and
//! kept: every metric of every report with the same run counts and no ties
//! shares one.

use std::sync::Arc;

use super::memo::Memo;

/// Patterns kept. A distribution is at most ~1,200 numbers (20 of 40
/// runs), so this bounds the memo at about 10 MB. Run counts without ties
/// need one pattern each; tied runs (perf-profile shares rounded to 0.01)
/// give many, most seen once, so the memo starts afresh now and then.
const KEPT_PATTERNS: usize = 1024;

static WAYS: Memo<Vec<u8>, Arc<[f64]>> = Memo::new(KEPT_PATTERNS);

/// Up to this many runs (both sides together) the Mann–Whitney p-value is
/// exact. Kept here, where the exact distribution is computed and its memo
/// keys are sized by it. The
/// exact distribution costs O(N · m · N·m) (0.9 ms at 20 a side, 30 ms at
/// 50 a side, release build) each time a tie pattern is new (it is kept, see
/// [`rank_sum_ways`]) and a report tests hundreds of metrics; beyond 20 a side the normal approximation is good to a few
/// percent of p (0.0106 against the exact 0.0095 at 20 a side).
pub const EXACT_MAX_RUNS: usize = 40;

/// m and up to [`EXACT_MAX_RUNS`] tie sizes.
const KEY_BYTES: usize = EXACT_MAX_RUNS + 1;

/// `ways[s]`: the number of ways to choose `m` of the doubled ranks that
/// tie groups of `tie_sizes` (in rank order, at most [`EXACT_MAX_RUNS`]
/// runs) give, summing to `s`. Counts are whole numbers below 2⁵³ for the
/// run counts the exact test takes (C(40, 20) ≈ 1.4e11), so f64 holds them
/// exactly.
pub(crate) fn rank_sum_ways(tie_sizes: &[usize], m: usize) -> Arc<[f64]> {
    // the key: m, then the tie sizes, a byte each
    let mut key = [0u8; KEY_BYTES];
    let len = tie_sizes.len() + 1;
    assert!(len <= KEY_BYTES, "the exact test takes at most 40 runs");
    for (byte, x) in key
        .iter_mut()
        .zip(std::iter::once(m).chain(tie_sizes.iter().copied()))
    {
        *byte = u8::try_from(x).expect("the exact test takes at most 40 runs");
    }
    WAYS.get_or_compute(&key[..len], || count_ways(tie_sizes, m).into())
}

/// The subset-sum count, one rank at a time in ascending order:
/// `ways[k][s]` counts the subsets of k of the ranks seen so far summing to
/// s. Row k is only visited where row k − 1 can be non-zero (sums of k − 1
/// of the ranks seen so far lie between the k − 1 smallest and the k − 1
/// largest of them). Every count and partial sum is a whole number below
/// 2⁵³, so each addition is exact and the result does not depend on their
/// order.
fn count_ways(tie_sizes: &[usize], m: usize) -> Vec<f64> {
    // A tie group at 0-based positions i..i+t holds ranks i+1..=i+t; twice
    // their mean is 2i + t + 1.
    let mut ranks2 = Vec::with_capacity(tie_sizes.iter().sum());
    for &t in tie_sizes {
        let i = ranks2.len();
        ranks2.extend(std::iter::repeat_n(2 * i + t + 1, t));
    }
    let n = ranks2.len();
    // prefix[i]: sum of the i smallest ranks
    let prefix: Vec<usize> = std::iter::once(0)
        .chain(ranks2.iter().scan(0, |sum, &r| {
            *sum += r;
            Some(*sum)
        }))
        .collect();
    let width = prefix[n] - prefix[n - m] + 1;
    let mut ways = vec![0f64; (m + 1) * width];
    ways[0] = 1.0;
    for (i, &r) in ranks2.iter().enumerate() {
        for k in (1..=m.min(i + 1)).rev() {
            let lowest = r + prefix[k - 1];
            let highest = (r + prefix[i] - prefix[i + 1 - k]).min(width - 1);
            // Row k gains row k − 1 shifted by r. Adding a zero count
            // changes nothing, so the whole range is added in one go.
            let (before, from_k) = ways.split_at_mut(k * width);
            let from = &before[(k - 1) * width + lowest - r..=(k - 1) * width + highest - r];
            for (to, from) in from_k[lowest..=highest].iter_mut().zip(from) {
                *to += from;
            }
        }
    }
    ways.split_off(m * width)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain count over every rank and every sum, without the bounds.
    fn count_ways_everywhere(tie_sizes: &[usize], m: usize) -> Vec<f64> {
        let mut ranks2 = Vec::new();
        for &t in tie_sizes {
            let i = ranks2.len();
            ranks2.extend(std::iter::repeat_n(2 * i + t + 1, t));
        }
        let width = ranks2.iter().rev().take(m).sum::<usize>() + 1;
        let mut ways = vec![0f64; (m + 1) * width];
        ways[0] = 1.0;
        for &r in &ranks2 {
            for k in (1..=m).rev() {
                for s in (r..width).rev() {
                    ways[k * width + s] += ways[(k - 1) * width + s - r];
                }
            }
        }
        ways.split_off(m * width)
    }

    #[test]
    fn three_of_six_without_ties() {
        // doubled ranks 2, 4, …, 12; sums of three run from 12 to 30 in steps
        // of 2 with the counts of 3-subsets of 1..=6 by sum: 1 1 2 3 3 3 3 2 1 1
        let ways = rank_sum_ways(&[1; 6], 3);
        let nonzero: Vec<(usize, f64)> = ways
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0.0)
            .map(|(s, w)| (s, *w))
            .collect();
        let counts: Vec<f64> = nonzero.iter().map(|&(_, w)| w).collect();
        assert_eq!(counts, [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0]);
        assert_eq!((nonzero[0].0, nonzero[9].0), (12, 30));
    }

    #[test]
    fn the_bounds_skip_only_zeros() {
        for pattern in [
            vec![1; 20],
            vec![1; 13],
            vec![3, 1, 1, 2, 5, 1, 1, 1],
            vec![6],
            vec![1, 1, 4, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1],
        ] {
            let n: usize = pattern.iter().sum();
            for m in 1..=n {
                assert_eq!(
                    count_ways(&pattern, m),
                    count_ways_everywhere(&pattern, m),
                    "{pattern:?}, m = {m}"
                );
            }
        }
    }

    #[test]
    fn a_kept_distribution_is_the_computed_one() {
        let first = rank_sum_ways(&[1, 2, 1, 1], 2);
        let again = rank_sum_ways(&[1, 2, 1, 1], 2);
        assert_eq!(*first, *count_ways(&[1, 2, 1, 1], 2));
        assert_eq!(first, again);
    }
}
