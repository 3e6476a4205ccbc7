//! The Mann–Whitney U test (Wilcoxon rank-sum), exact for the run counts a
//! comparison has. Written here because statrs' exact p-value is wrong when
//! the first sample is not the larger one.
//!
//! Ties get mid-ranks, and the p-value comes from the exact permutation
//! distribution of the rank sum *given those mid-ranks* (every way of
//! choosing which of the pooled runs are base runs is equally likely under
//! the null hypothesis). That is exact with ties too, unlike tie-free tables.
//! With more than [`EXACT_MAX_RUNS`] runs in all, the normal approximation
//! with tie-corrected variance and continuity correction is used instead.

use serde::{Deserialize, Serialize};

use super::distribution::normal_two_sided_p;
pub use super::rank_sum::EXACT_MAX_RUNS;
use super::rank_sum::rank_sum_ways;

/// The result of a Mann–Whitney test of base against patched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the base runs: pairs (base, patched) with base > patched, ties
    /// counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// The p-value is exact (not the normal approximation).
    pub exact: bool,
    /// The smallest two-sided p-value these run counts (and ties) can give;
    /// with 3 runs a side it is 2/20 = 0.1, so the test alone can never
    /// reach 0.05 there.
    pub min_attainable_p: f64,
}

/// Runs the test; `None` when a side has no runs.
pub fn mann_whitney(base: &[f64], patched: &[f64]) -> Option<MannWhitney> {
    if base.is_empty() || patched.is_empty() {
        return None;
    }
    let (nb, np) = (base.len(), patched.len());
    let n = nb + np;
    // Pool, sort and give each run twice its mid-rank, so ranks stay integers.
    let mut pooled: Vec<(f64, bool)> = base
        .iter()
        .map(|&v| (v, true))
        .chain(patched.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut tie_sizes = Vec::new();
    let mut base_rank_sum2 = 0u64;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        // positions i..=j hold ranks i+1..=j+1; twice their mean is i+j+2
        let base_runs = pooled[i..=j].iter().filter(|(_, is_base)| *is_base).count();
        base_rank_sum2 += ((i + j + 2) * base_runs) as u64;
        tie_sizes.push(j - i + 1);
        i = j + 1;
    }
    let u = base_rank_sum2 as f64 / 2.0 - (nb * (nb + 1)) as f64 / 2.0;

    if n <= EXACT_MAX_RUNS {
        // Track the smaller side: its rank sum deviates from its expectation
        // by exactly as much as the other side's does.
        let (m, observed2) = if nb <= np {
            (nb, base_rank_sum2)
        } else {
            (np, (n * (n + 1)) as u64 - base_rank_sum2)
        };
        let (p, min_attainable_p) = exact_p(&rank_sum_ways(&tie_sizes, m), n, m, observed2);
        Some(MannWhitney {
            u,
            p,
            exact: true,
            min_attainable_p,
        })
    } else {
        let (nbf, npf, nf) = (nb as f64, np as f64, n as f64);
        let ties: f64 = tie_sizes
            .iter()
            .map(|&t| {
                let t = t as f64;
                t * t * t - t
            })
            .sum();
        let var = nbf * npf / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
        let centre = nbf * npf / 2.0;
        let p = if var > 0.0 {
            let z = ((u - centre).abs() - 0.5).max(0.0) / var.sqrt();
            normal_two_sided_p(z)
        } else {
            1.0
        };
        let extreme = if var > 0.0 {
            normal_two_sided_p((centre - 0.5) / var.sqrt())
        } else {
            1.0
        };
        Some(MannWhitney {
            u,
            p,
            exact: false,
            min_attainable_p: extreme,
        })
    }
}

/// Exact two-sided p-value of a doubled rank sum `observed2` of `m` of the
/// `n` pooled runs, given the null distribution `row` of that sum (see
/// [`rank_sum_ways`]), and the smallest attainable p-value.
fn exact_p(row: &[f64], n: usize, m: usize, observed2: u64) -> (f64, f64) {
    let expected2 = (m * (n + 1)) as i64;
    let dev = |s: usize| (s as i64 - expected2).unsigned_abs();
    let observed_dev = (observed2 as i64 - expected2).unsigned_abs();
    let total: f64 = row.iter().sum();
    let mut tail = 0.0;
    let mut max_dev = 0;
    for (s, &w) in row.iter().enumerate() {
        if w == 0.0 {
            continue;
        }
        if dev(s) >= observed_dev {
            tail += w;
        }
        max_dev = max_dev.max(dev(s));
    }
    let extreme: f64 = row
        .iter()
        .enumerate()
        .filter(|&(s, &w)| w != 0.0 && dev(s) == max_dev)
        .map(|(_, &w)| w)
        .sum();
    ((tail / total).min(1.0), (extreme / total).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn fewer_base_runs_than_patched() {
        // base 1, 2 (n1 = 2) below patched 3, 4, 5 (n2 = 3): base ranks 1 + 2 = 3.
        // C(5, 2) = 10 equally likely rank pairs; their sums 3,4,5,5,6,6,7,7,8,9
        // centre on 2·6/2 = 6; |S − 6| ≥ 3 for S = 3 and S = 9 → p = 2/10.
        let mw = mann_whitney(&[1.0, 2.0], &[3.0, 4.0, 5.0]).unwrap();
        assert_eq!(mw.u, 0.0);
        assert!(close(mw.p, 0.2));
        assert!(close(mw.min_attainable_p, 0.2));
        assert!(mw.exact);
    }

    #[test]
    fn more_base_runs_than_patched_gives_the_same_p() {
        let mw = mann_whitney(&[3.0, 4.0, 5.0], &[1.0, 2.0]).unwrap();
        // every (base, patched) pair has base > patched: U = 3 · 2 = 6
        assert_eq!(mw.u, 6.0);
        assert!(close(mw.p, 0.2));
    }

    #[test]
    fn three_runs_a_side_cannot_reach_five_percent() {
        // complete separation is the most extreme of C(6, 3) = 20 splits,
        // one at each end: p = 2/20 = 0.1
        let mw = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(mw.p, 0.1));
        assert!(close(mw.min_attainable_p, 0.1));
        // four a side: 2 / C(8, 4) = 2/70 = 0.028571
        let mw = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!(close(mw.p, 2.0 / 70.0));
    }

    #[test]
    fn ties_use_mid_ranks_and_the_exact_conditional_distribution() {
        // base 1, 2, 2 and patched 2, 3, 4. Pooled ranks: 1 → 1; the three 2s
        // share ranks 2, 3, 4 → 3 each; 3 → 5; 4 → 6. Doubled: 2, 6, 6, 6, 10, 12.
        // Base doubled sum 2 + 6 + 6 = 14; centre 3 · 7 = 21; deviation 7.
        // The 20 ways to pick 3 of the 6 doubled ranks:
        //   {2,6,6}×3 = 14   {2,6,10}×3 = 18  {2,6,12}×3 = 20  {2,10,12}×1 = 24
        //   {6,6,6}×1 = 18   {6,6,10}×3 = 22  {6,6,12}×3 = 24  {6,10,12}×3 = 28
        // |S − 21| ≥ 7 for S = 14 (3 ways) and S = 28 (3 ways) → p = 6/20 = 0.3.
        // U of base = 14/2 − 3·4/2 = 1 (the pair 2 vs 2 counts ½ twice).
        let mw = mann_whitney(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]).unwrap();
        assert_eq!(mw.u, 1.0);
        assert!(close(mw.p, 0.3));
        assert!(close(mw.min_attainable_p, 0.3));
    }

    #[test]
    fn identical_runs_are_no_evidence() {
        let mw = mann_whitney(&[5.0; 3], &[5.0; 3]).unwrap();
        assert!(close(mw.p, 1.0));
        assert_eq!(mw.u, 4.5);
    }

    #[test]
    fn one_run_a_side() {
        // two arrangements, both equally extreme → p = 1
        let mw = mann_whitney(&[1.0], &[2.0]).unwrap();
        assert!(close(mw.p, 1.0));
        assert!(mann_whitney(&[], &[2.0]).is_none());
    }

    #[test]
    fn many_runs_use_the_normal_approximation() {
        // 60 vs 60, fully separated: U = 0, centre 1800,
        // var = 60·60/12 · 121 = 36300, z = (1800 − 0.5)/190.5256 = 9.444926,
        // p = erfc(z/√2) = 3.5566e-21
        let base: Vec<f64> = (0..60).map(f64::from).collect();
        let patched: Vec<f64> = (60..120).map(f64::from).collect();
        let mw = mann_whitney(&base, &patched).unwrap();
        assert!(!mw.exact);
        assert_eq!(mw.u, 0.0);
        assert!((mw.p / 3.556_570_974_984_774e-21 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn many_runs_with_ties_correct_the_variance() {
        // base 0,0,1,1,…,29,29 and patched 15,15,…,44,44 (N = 120).
        // Tie groups: 0..14 twice, 15..29 four times, 30..44 twice:
        //   Σ(t³ − t) = 15·6 + 15·60 + 15·6 = 1080.
        // var = 3600/12 · (121 − 1080/(120·119)) = 300 · 120.924370 = 36277.31
        // U = 4·(1 + … + 14) + 15·(4 ties · ½) = 420 + 30 = 450
        // z = (1350 − 0.5)/190.4660 = 7.085263 → p = 1.38791e-12
        let base: Vec<f64> = (0..60).map(|i| f64::from(i / 2)).collect();
        let patched: Vec<f64> = (0..60).map(|i| f64::from(15 + i / 2)).collect();
        let mw = mann_whitney(&base, &patched).unwrap();
        assert_eq!(mw.u, 450.0);
        assert!((mw.p / 1.387_907_913_894_663e-12 - 1.0).abs() < 1e-8);
    }

    #[test]
    fn exact_p_for_twenty_runs_a_side_and_normal_beyond() {
        // base 0..19, patched 5.5..24.5 (no ties): U = Σ_{v=6}^{19} (v − 5)
        // = 1 + … + 14 = 105. The exact p is 0.00948361 (scipy's exact
        // mannwhitneyu agrees); the normal approximation would say 0.01058.
        let base: Vec<f64> = (0..20).map(f64::from).collect();
        let patched: Vec<f64> = (0..20).map(|v| f64::from(v) + 5.5).collect();
        let mw = mann_whitney(&base, &patched).unwrap();
        assert!(mw.exact);
        assert_eq!(mw.u, 105.0);
        assert!((mw.p / 0.009_483_607_191_205_003 - 1.0).abs() < 1e-9);
        // one more base run (41 in all) switches to the approximation:
        // U = 105 + 15 = 120, centre 210, var = 21·20·42/12 = 1470,
        // z = (90 − 0.5)/38.341 = 2.33431 → p = 0.0195779
        let mut base = base;
        base.push(20.0);
        let mw = mann_whitney(&base, &patched).unwrap();
        assert!(!mw.exact);
        assert_eq!(mw.u, 120.0);
        assert!((mw.p / 0.019_577_853_822_259_64 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn unequal_sizes_seven_against_four() {
        // patched 3.5, 8, 9, 10 against base 1..7: patched ranks 4, 9, 10, 11,
        // sum 34, centre 4·12/2 = 24, deviation 10. Of the C(11, 4) = 330 rank
        // sets, sums ≥ 34 number 1 (38) + 1 (37) + 2 (36) + 3 (35) + 5 (34) = 12,
        // and as many are ≤ 14 → p = 24/330 = 0.0727, whichever side is first.
        let base = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let patched = [3.5, 8.0, 9.0, 10.0];
        let a = mann_whitney(&base, &patched).unwrap();
        let b = mann_whitney(&patched, &base).unwrap();
        assert!(close(a.p, 24.0 / 330.0));
        assert!(close(b.p, 24.0 / 330.0));
        assert_eq!(a.u + b.u, 28.0);
    }
}
