//! The distribution functions the tests and intervals need: Student's t
//! (two-sided tail probability and critical value) through the regularized
//! incomplete beta function, and the normal tail through erfc. Written here
//! rather than pulled from a statistics crate to keep the shared crate light;
//! each function is checked against closed forms and published table values.

use std::f64::consts::PI;

use super::memo::Memo;

/// ln Γ(x) for x > 0, by the Lanczos approximation (g = 7, nine terms;
/// relative error about 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    IncompleteBeta::new(a, b).at(x)
}

/// I_x(a, b) for fixed a and b, with the three ln Γ terms of its front
/// factor computed once: inverting a tail evaluates it at many x.
#[derive(Debug, Clone, Copy)]
struct IncompleteBeta {
    a: f64,
    b: f64,
    ln_gamma_ab: f64,
    ln_gamma_a: f64,
    ln_gamma_b: f64,
}

impl IncompleteBeta {
    fn new(a: f64, b: f64) -> Self {
        IncompleteBeta {
            a,
            b,
            ln_gamma_ab: ln_gamma(a + b),
            ln_gamma_a: ln_gamma(a),
            ln_gamma_b: ln_gamma(b),
        }
    }

    fn at(&self, x: f64) -> f64 {
        let (a, b) = (self.a, self.b);
        if x <= 0.0 {
            return 0.0;
        }
        if x >= 1.0 {
            return 1.0;
        }
        let ln_front =
            a * x.ln() + b * (1.0 - x).ln() + self.ln_gamma_ab - self.ln_gamma_a - self.ln_gamma_b;
        let front = ln_front.exp();
        // The continued fraction converges fast for x below (a+1)/(a+b+2); use
        // the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) above it.
        if x < (a + 1.0) / (a + b + 2.0) {
            front * beta_continued_fraction(a, b, x) / a
        } else {
            1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
        }
    }
}

/// 1 / (1 + d1 / (1 + d2 / (1 + …))) with the incomplete beta's
/// coefficients d_{2m+1} = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and
/// d_{2m} = m(b−m)x / ((a+2m−1)(a+2m)), evaluated by Lentz's method.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    // f = b0 + a1/(b1 + a2/(b2 + …)) with b0 = 1, b_j = 1, a_j = d_j.
    let mut f = 1.0;
    let mut c = 1.0;
    let mut d = 0.0;
    for j in 1..=10_000u32 {
        let m = f64::from(j / 2);
        let dj = if j % 2 == 1 {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        } else {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        };
        d = 1.0 + dj * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + dj / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < EPS {
            break;
        }
    }
    1.0 / f
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom (df may be
/// fractional, as Welch–Satterthwaite gives): I_{df/(df+t²)}(df/2, 1/2).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    StudentT::new(df).two_sided_p(t)
}

/// The critical value t* with P(|T| ≥ t*) = `alpha` (for a 95% interval,
/// alpha = 0.05 gives the 97.5% quantile), by bisection on the tail.
///
/// The bisection starts from [0, 1], doubles the top while the tail is
/// above alpha, and halves until the bracket is 1e-14 of t* wide; its answer
/// is decided by which side of alpha the tail lands at each midpoint. Most
/// midpoints are far from t*, where that side is plain: so t* is first
/// found by Newton's method, the tail is checked at t*·(1 ∓ δ), and the
/// bisection then evaluates the tail only at midpoints between those two,
/// reaching the very same answer with 12–14 evaluations instead of ~50. δ
/// is a hundred times the tail's rounding noise and more (see
/// `StudentT::bracket`); when Newton does not settle or a check fails,
/// every midpoint is evaluated. Answers are also kept per (alpha, df) bit
/// pattern: integer df (a constant side) and rebuilt reports repeat.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    static CRITICAL: Memo<(u64, u64), f64> = Memo::new(4096);
    CRITICAL.get_or_compute(&(alpha.to_bits(), df.to_bits()), || {
        StudentT::new(df).critical(alpha)
    })
}

/// The point where `above` turns false, to 1e-14 relative, by doubling
/// from 1 and then bisecting from 0.
fn bisect(mut above: impl FnMut(f64) -> bool) -> f64 {
    let mut low = 0.0;
    let mut high = 1.0;
    while above(high) {
        high *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if above(mid) {
            low = mid;
        } else {
            high = mid;
        }
        if high - low <= 1e-14 * high {
            break;
        }
    }
    0.5 * (low + high)
}

/// Student's t with the ln Γ terms of its tail and density computed once.
#[derive(Debug, Clone, Copy)]
struct StudentT {
    df: f64,
    tail: IncompleteBeta,
}

impl StudentT {
    fn new(df: f64) -> Self {
        StudentT {
            df,
            tail: IncompleteBeta::new(df / 2.0, 0.5),
        }
    }

    fn two_sided_p(&self, t: f64) -> f64 {
        let df = self.df;
        if t.is_infinite() {
            return 0.0;
        }
        if df > 1e7 {
            // t and normal agree to 1e-7 here, while ln Γ of such huge arguments
            // cancels away the beta route's precision.
            return normal_two_sided_p(t);
        }
        self.tail.at(df / (df + t * t)).clamp(0.0, 1.0)
    }

    /// The density at t: Γ((ν+1)/2) / (√(νπ) Γ(ν/2)) · (1 + t²/ν)^(−(ν+1)/2).
    fn density(&self, t: f64) -> f64 {
        let df = self.df;
        (self.tail.ln_gamma_ab
            - self.tail.ln_gamma_a
            - 0.5 * (df * PI).ln()
            - 0.5 * (df + 1.0) * (t * t / df).ln_1p())
        .exp()
    }

    /// [`t_critical`] without the memo.
    fn critical(&self, alpha: f64) -> f64 {
        let above = |x: f64| self.two_sided_p(x) > alpha;
        match self.bracket(alpha) {
            Some((low, high)) => bisect(|x| x <= low || (x < high && above(x))),
            None => bisect(above),
        }
    }

    /// (t*·(1 − δ), t*·(1 + δ)) with the tail checked above `alpha` at the
    /// first and not above it at the second; `None` if Newton's method on
    /// ln P(|T| ≥ e^u) = ln alpha (nearly straight in u, as the tail falls
    /// like a power of t) does not settle or a check fails.
    fn bracket(&self, alpha: f64) -> Option<(f64, f64)> {
        let df = self.df;
        if !(df > 0.0 && df <= 1e7 && alpha > 0.0 && alpha < 1.0) {
            return None;
        }
        // The tail turns at t* within a few ulps (measured up to df 9e6);
        // δ leaves a hundredfold margin, widening with df as the rounding
        // of (df/2)·ln x and ln Γ(df/2) grows, and below df 1, where the
        // tail falls like t^−df and so hardly moves with t.
        let delta = (1e-13 + 1e-14 * df * (1.0 + df.max(1.0).ln())) / df.min(1.0);
        // what is known of t*: above `low`, not above `high`
        let (mut low, mut high) = (0.0, f64::INFINITY);
        // (the expansion in 1/df means nothing below df 1)
        let mut t = if df >= 1.0 {
            cornish_fisher(normal_critical(alpha), df)
        } else {
            2.0
        };
        for _ in 0..40 {
            let p = self.two_sided_p(t);
            if p > alpha {
                low = t;
            } else {
                high = t;
            }
            let slope = -2.0 * t * self.density(t) / p;
            let next = t * ((alpha.ln() - p.ln()) / slope).exp();
            let settled = if (next - t).abs() <= delta / 16.0 * t {
                Some(next)
            } else if high - low <= delta / 16.0 * low {
                // rounding stalls Newton, but what is known is as narrow
                Some(0.5 * (low + high))
            } else {
                None
            };
            if let Some(t) = settled {
                let (l, h) = (t * (1.0 - delta), t * (1.0 + delta));
                return (self.two_sided_p(l) > alpha && self.two_sided_p(h) <= alpha)
                    .then_some((l, h));
            }
            // a step out of what is known falls back to halving it
            t = if next > low && next < high {
                next
            } else if high.is_finite() {
                0.5 * (low + high)
            } else {
                2.0 * t
            };
        }
        None
    }
}

/// z* with P(|Z| ≥ z*) = `alpha` for a standard normal Z, by the same
/// bisection, kept per alpha (reports use one level).
fn normal_critical(alpha: f64) -> f64 {
    static CRITICAL: Memo<u64, f64> = Memo::new(64);
    CRITICAL.get_or_compute(&alpha.to_bits(), || {
        bisect(|z| normal_two_sided_p(z) > alpha)
    })
}

/// Student's t quantile from the normal one `z` by the Cornish–Fisher
/// expansion in 1/df to the fourth order (Abramowitz & Stegun 26.7.5):
/// good to 1e-5 from df 10, a tenth off at df 1; a start for Newton.
fn cornish_fisher(z: f64, df: f64) -> f64 {
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0;
    z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
}

/// erfc(x) for x ≥ 0: the Taylor series of erf below 3, the continued
/// fraction erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))
/// above it.
pub fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 3.0 {
        // erf(x) = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
        let mut term = x; // (−1)^n x^(2n+1) / n!
        let mut sum = x;
        for n in 1..200 {
            term *= -x * x / f64::from(n);
            let add = term / f64::from(2 * n + 1);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - 2.0 / PI.sqrt() * sum;
    }
    // Lentz on x + a1/(x + a2/(x + …)) with a_k = k/2.
    const TINY: f64 = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..10_000u32 {
        let ak = f64::from(k) / 2.0;
        d = x + ak * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = x + ak / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / PI.sqrt() / f
}

/// P(|Z| ≥ |z|) for a standard normal Z: erfc(|z| / √2).
pub fn normal_two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn ln_gamma_matches_factorials_and_sqrt_pi() {
        // Γ(5) = 4! = 24; Γ(1/2) = √π; Γ(10) = 9! = 362880
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-14));
        assert!(close(ln_gamma(0.5), PI.sqrt().ln(), 1e-14));
        assert!(close(ln_gamma(10.0), 362_880f64.ln(), 1e-14));
        assert!(ln_gamma(1.0).abs() < 1e-14 && ln_gamma(2.0).abs() < 1e-14);
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 − (1 − x)^b
        assert!(close(incomplete_beta(1.0, 1.0, 0.3), 0.3, 1e-14));
        assert!(close(incomplete_beta(3.0, 1.0, 0.5), 0.125, 1e-14));
        assert!(close(
            incomplete_beta(1.0, 4.0, 0.2),
            1.0 - 0.8f64.powi(4),
            1e-14
        ));
        // I_x(2, 2) = 3x² − 2x³: at x = 0.7 → 1.47 − 0.686 = 0.784
        assert!(close(incomplete_beta(2.0, 2.0, 0.7), 0.784, 1e-13));
        assert_eq!(incomplete_beta(2.0, 3.0, 0.0), 0.0);
        assert_eq!(incomplete_beta(2.0, 3.0, 1.0), 1.0);
    }

    #[test]
    fn t_tail_closed_forms() {
        // df = 1 is Cauchy: P(|T| ≥ 1) = 1 − 2·atan(1)/π = 0.5
        assert!(close(t_two_sided_p(1.0, 1.0), 0.5, 1e-13));
        // df = 2: P(|T| ≥ t) = 1 − t/√(2 + t²); t = 2 → 1 − 2/√6 = 0.18350341907227397
        assert!(close(
            t_two_sided_p(2.0, 2.0),
            0.183_503_419_072_273_97,
            1e-12
        ));
        // df = 4: P(|T| ≥ t) = 1 − 1.5u + 0.5u³, u = t/√(4 + t²);
        // t = 3: u = 3/√13 = 0.8320502943, u² = 9/13, u³ = 0.5760348192
        //      → 1 − 1.2480754415 + 0.2880174096 = 0.0399419681
        let u: f64 = 3.0 / 13f64.sqrt();
        let expected = 1.0 - 1.5 * u + 0.5 * u.powi(3);
        assert!(close(expected, 0.039_941_968_1, 1e-8));
        assert!(close(t_two_sided_p(3.0, 4.0), expected, 1e-12));
        assert_eq!(t_two_sided_p(0.0, 7.0), 1.0);
    }

    #[test]
    fn t_critical_values_match_the_tables() {
        // 97.5% quantiles of Student's t, as printed in every table
        for (df, t) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (4.0, 2.776_445_105),
            (5.0, 2.570_581_836),
            (10.0, 2.228_138_852),
            (30.0, 2.042_272_456),
        ] {
            let got = t_critical(0.05, df);
            assert!(close(got, t, 1e-9), "df {df}: {got} vs {t}");
        }
        // df = 2 closed form: t* = √(2/(1 − (1 − α)²) − 2) … for α = 0.05:
        // (1 − α)² = 0.9025 → 2/0.0975 − 2 = 18.512820… → √ = 4.302652729…
        assert!(close(
            t_critical(0.05, 2.0),
            (2.0 / 0.0975 - 2.0f64).sqrt(),
            1e-12
        ));
        // huge df tends to the normal quantile 1.959963985
        assert!(close(t_critical(0.05, 1e9), 1.959_963_985, 1e-8));
    }

    #[test]
    fn the_bracketed_bisection_lands_where_the_plain_one_does() {
        // df as Welch–Satterthwaite gives them (fractional, 1 to a few
        // hundred), and far beyond, at several levels
        let mut dfs: Vec<f64> = (1..=1500).map(|i| 0.0297 * f64::from(i)).collect();
        dfs.extend((1..=400).map(|i| 0.37 * f64::from(i)));
        // and any fraction: the golden-ratio sequence over [1, 60)
        dfs.extend((1..=2000).map(|i| 1.0 + 59.0 * (0.618_033_988_749_895 * f64::from(i)).fract()));
        dfs.extend((0..60).map(|i| 1.0 + 1.37f64.powi(i)));
        for alpha in [0.05, 0.01, 0.1, 0.32, 0.001] {
            for &df in &dfs {
                let t = StudentT::new(df);
                let plain = bisect(|x| t.two_sided_p(x) > alpha);
                let fast = t.critical(alpha);
                assert_eq!(fast.to_bits(), plain.to_bits(), "alpha {alpha}, df {df}");
                if df <= 1e7 {
                    assert!(t.bracket(alpha).is_some(), "no bracket at df {df}");
                }
            }
        }
        // and the memo answers what it computed
        assert_eq!(
            t_critical(0.05, 4.7).to_bits(),
            t_critical(0.05, 4.7).to_bits()
        );
        assert_eq!(
            t_critical(0.05, 4.7).to_bits(),
            StudentT::new(4.7).critical(0.05).to_bits()
        );
    }

    #[test]
    fn newton_starts_near_the_table_values() {
        let z = normal_critical(0.05);
        assert!(close(z, 1.959_963_985, 1e-9));
        // 97.5% quantiles: df 10 → 2.228138852, df 30 → 2.042272456
        assert!(close(cornish_fisher(z, 10.0), 2.228_138_852, 1e-5));
        assert!(close(cornish_fisher(z, 30.0), 2.042_272_456, 1e-7));
        // df 1 (12.706) is far off, and Newton still settles
        assert!(close(cornish_fisher(z, 1.0), 12.706_204_736, 0.15));
    }

    #[test]
    fn the_density_is_the_tails_slope() {
        // −dP/dt = 2 f(t), checked by a central difference
        for df in [1.0, 3.3, 17.0, 250.0] {
            let t = StudentT::new(df);
            for x in [0.5, 2.0, 4.0] {
                let h = 1e-6;
                let slope = (t.two_sided_p(x - h) - t.two_sided_p(x + h)) / (2.0 * h);
                assert!(close(slope, 2.0 * t.density(x), 1e-7), "df {df}, t {x}");
            }
        }
        // df = 1 is Cauchy: f(0) = 1/π
        assert!(close(StudentT::new(1.0).density(0.0), 1.0 / PI, 1e-14));
    }

    #[test]
    fn erfc_and_normal_tail() {
        assert!(close(erfc(0.0), 1.0, 1e-15));
        assert!(close(erfc(1.0), 0.157_299_207_050_285_13, 1e-13));
        assert!(close(erfc(3.0), 2.209_049_699_858_544e-5, 1e-12));
        assert!(close(erfc(5.0), 1.537_459_794_428_035e-12, 1e-11));
        // P(|Z| ≥ 1.959963985) = 0.05
        assert!(close(normal_two_sided_p(1.959_963_985), 0.05, 1e-8));
        assert!(close(normal_two_sided_p(-1.959_963_985), 0.05, 1e-8));
    }
}
