//! Properties of the statistics checked on many generated samples (a fixed
//! xorshift seed, so every run checks the same cases): the exact
//! Mann–Whitney p-value against brute-force enumeration, symmetries, and the
//! calibration of the interval and the verdict on simulated normal runs.

use patchperf_common::metric::Direction;
use patchperf_common::stats::{
    ChangeUnit, Evidence, Interval, Verdict, VerdictPolicy, benjamini_hochberg, change_interval,
    judge, mann_whitney, welch_test,
};

/// xorshift64*: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Standard normal by Box–Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Two-sided p of the base rank-sum by enumerating every way to choose which
/// pooled values are the base runs (mid-ranks for ties).
fn brute_force_mw_p(base: &[f64], patched: &[f64]) -> f64 {
    let pooled: Vec<f64> = base.iter().chain(patched).copied().collect();
    let n = pooled.len();
    let rank = |v: f64| {
        let below = pooled.iter().filter(|&&x| x < v).count() as f64;
        let equal = pooled.iter().filter(|&&x| x == v).count() as f64;
        below + (equal + 1.0) / 2.0
    };
    let ranks: Vec<f64> = pooled.iter().map(|&v| rank(v)).collect();
    let m = base.len();
    let centre = m as f64 * (n as f64 + 1.0) / 2.0;
    let observed = (ranks[..m].iter().sum::<f64>() - centre).abs();
    let (mut hits, mut total) = (0u64, 0u64);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != m {
            continue;
        }
        let s: f64 = (0..n)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| ranks[i])
            .sum();
        total += 1;
        if (s - centre).abs() >= observed - 1e-9 {
            hits += 1;
        }
    }
    hits as f64 / total as f64
}

#[test]
fn exact_mann_whitney_equals_brute_force_enumeration_with_ties() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..300 {
        let nb = 1 + rng.below(6) as usize;
        let np = 1 + rng.below(6) as usize;
        // values from a small set so ties are frequent
        let base: Vec<f64> = (0..nb).map(|_| rng.below(5) as f64).collect();
        let patched: Vec<f64> = (0..np).map(|_| rng.below(5) as f64).collect();
        let mw = mann_whitney(&base, &patched).unwrap();
        let brute = brute_force_mw_p(&base, &patched);
        assert!(
            (mw.p - brute).abs() < 1e-12,
            "{base:?} vs {patched:?}: {} vs {brute}",
            mw.p
        );
        // swapping the sides changes nothing but U
        let swapped = mann_whitney(&patched, &base).unwrap();
        assert!((swapped.p - mw.p).abs() < 1e-12);
        assert_eq!(swapped.u + mw.u, (nb * np) as f64);
        assert!(mw.p > 0.0 && mw.p <= 1.0 && mw.p >= mw.min_attainable_p - 1e-15);
    }
}

#[test]
fn welch_is_symmetric_and_finite() {
    let mut rng = Rng(42);
    for _ in 0..500 {
        let nb = 2 + rng.below(8) as usize;
        let np = 2 + rng.below(8) as usize;
        let scale = 10f64.powi(rng.below(10) as i32 - 3);
        let base: Vec<f64> = (0..nb).map(|_| scale * (1.0 + rng.normal())).collect();
        let patched: Vec<f64> = (0..np).map(|_| scale * (1.3 + rng.normal())).collect();
        let a = welch_test(&base, &patched).unwrap();
        let b = welch_test(&patched, &base).unwrap();
        assert!(a.p.is_finite() && a.df.is_finite() && a.p >= 0.0 && a.p <= 1.0);
        assert!((a.p - b.p).abs() < 1e-12 && (a.df - b.df).abs() < 1e-9);
        assert!(a.df >= (nb.min(np) - 1) as f64 - 1e-9);
        assert!(a.df <= (nb + np - 2) as f64 + 1e-9);
    }
}

#[test]
fn intervals_contain_the_estimate() {
    let mut rng = Rng(7);
    for _ in 0..500 {
        let base: Vec<f64> = (0..3 + rng.below(5))
            .map(|_| 100.0 + 5.0 * rng.normal())
            .collect();
        let patched: Vec<f64> = (0..3 + rng.below(5))
            .map(|_| 104.0 + 5.0 * rng.normal())
            .collect();
        let mb = base.iter().sum::<f64>() / base.len() as f64;
        let mp = patched.iter().sum::<f64>() / patched.len() as f64;
        for (unit, estimate) in [
            (ChangeUnit::Percent, 100.0 * (mp - mb) / mb),
            (ChangeUnit::Points, mp - mb),
        ] {
            match change_interval(unit, &base, &patched, 0.95).unwrap() {
                Interval::Bounded { low, high } => {
                    assert!(
                        low <= estimate && estimate <= high,
                        "{low} {estimate} {high}"
                    )
                }
                Interval::Unbounded => panic!("base mean 100 ± 5 is clearly above 0"),
            }
        }
    }
}

#[test]
fn benjamini_hochberg_q_is_monotone_and_never_below_p() {
    let mut rng = Rng(11);
    for _ in 0..200 {
        let p: Vec<f64> = (0..1 + rng.below(40)).map(|_| rng.uniform()).collect();
        let q = benjamini_hochberg(&p);
        for i in 0..p.len() {
            // m·p/m may round a last bit below p
            assert!(q[i] >= p[i] * (1.0 - 1e-15) && q[i] <= 1.0);
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    assert!(q[i] <= q[j]);
                }
            }
        }
    }
}

/// Share of simulated comparisons (4 runs a side, normal noise of 2%) whose
/// 95% Fieller interval covers the true +3% change. Fieller is exact for
/// normal means only with known variances; with estimated, unequal
/// variances it should still be close to 95%.
#[test]
fn fieller_covers_the_true_change_about_95_percent_of_the_time() {
    let mut rng = Rng(2024);
    let trials = 4000;
    let mut covered = 0;
    for _ in 0..trials {
        let base: Vec<f64> = (0..4)
            .map(|_| 1000.0 * (1.0 + 0.02 * rng.normal()))
            .collect();
        let patched: Vec<f64> = (0..4)
            .map(|_| 1030.0 * (1.0 + 0.02 * rng.normal()))
            .collect();
        if let Interval::Bounded { low, high } =
            change_interval(ChangeUnit::Percent, &base, &patched, 0.95).unwrap()
        {
            if low <= 3.0 && 3.0 <= high {
                covered += 1;
            }
        }
    }
    let coverage = f64::from(covered) / f64::from(trials);
    // binomial sd at 95% over 4000 trials is 0.34%; allow ±1.5%
    eprintln!("Fieller coverage over {trials} trials: {coverage}");
    assert!((coverage - 0.95).abs() < 0.015, "coverage {coverage}");
}

/// A/A comparisons (no change at all) must rarely produce a verdict of
/// change: with 5 runs a side and 1% noise, the share of
/// improvement/regression verdicts stays below the 5% significance level.
#[test]
fn aa_comparisons_rarely_claim_a_change() {
    let mut rng = Rng(99);
    let trials = 2000;
    let mut claimed = 0;
    let policy = VerdictPolicy::default();
    for _ in 0..trials {
        let base: Vec<f64> = (0..5)
            .map(|_| 1000.0 * (1.0 + 0.01 * rng.normal()))
            .collect();
        let patched: Vec<f64> = (0..5)
            .map(|_| 1000.0 * (1.0 + 0.01 * rng.normal()))
            .collect();
        let w = welch_test(&base, &patched).unwrap();
        let mb = base.iter().sum::<f64>() / 5.0;
        let mp = patched.iter().sum::<f64>() / 5.0;
        let verdict = judge(
            &Evidence {
                direction: Direction::HigherIsBetter,
                unit: ChangeUnit::Percent,
                base_runs: 5,
                patched_runs: 5,
                change: Some(100.0 * (mp - mb) / mb),
                interval: change_interval(ChangeUnit::Percent, &base, &patched, 0.95),
                q: Some(w.p),
                mann_whitney: mann_whitney(&base, &patched),
            },
            &policy,
        )
        .verdict;
        if verdict.is_change() {
            claimed += 1;
        }
        assert_ne!(verdict, Verdict::Changed);
    }
    let rate = f64::from(claimed) / f64::from(trials);
    eprintln!("A/A false change rate over {trials} trials: {rate}");
    assert!(rate < 0.05, "false change rate {rate}");
}

/// A real 5% change with 5 runs a side and 1% noise is found nearly always.
#[test]
fn a_clear_change_is_found() {
    let mut rng = Rng(5);
    let trials = 500;
    let mut found = 0;
    for _ in 0..trials {
        let base: Vec<f64> = (0..5)
            .map(|_| 1000.0 * (1.0 + 0.01 * rng.normal()))
            .collect();
        let patched: Vec<f64> = (0..5)
            .map(|_| 1050.0 * (1.0 + 0.01 * rng.normal()))
            .collect();
        let w = welch_test(&base, &patched).unwrap();
        let mb = base.iter().sum::<f64>() / 5.0;
        let mp = patched.iter().sum::<f64>() / 5.0;
        let j = judge(
            &Evidence {
                direction: Direction::HigherIsBetter,
                unit: ChangeUnit::Percent,
                base_runs: 5,
                patched_runs: 5,
                change: Some(100.0 * (mp - mb) / mb),
                interval: change_interval(ChangeUnit::Percent, &base, &patched, 0.95),
                q: Some(w.p),
                mann_whitney: mann_whitney(&base, &patched),
            },
            &VerdictPolicy::default(),
        );
        if j.verdict == Verdict::Improvement {
            found += 1;
        }
    }
    eprintln!("5% change found in {found}/{trials} trials");
    assert!(
        found as f64 / trials as f64 > 0.95,
        "found {found}/{trials}"
    );
}
