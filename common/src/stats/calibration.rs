//! δ, the smallest change a verdict calls real, from what a machine can
//! resolve for one kind of run (measurement mode, workload, mode, nr_task).
//!
//! Before an A/A comparison (two sets of boots of one kernel) has measured
//! that kind of run on the machine, δ is the mode's default
//! ([`uncalibrated_percent`]). After, δ follows the measured noise, down as
//! well as up: `max(floor, K × bound)`, with `bound` the largest change the
//! A/A's 95% interval of the headline metric allows ([`calibrated_percent`]).
//!
//! Why these numbers:
//! - **K = 2.** An A/A's bound is itself an estimate from a few runs; with
//!   3 runs a side its standard deviation estimate varies by about ±50%
//!   between two A/As of the same machine. Twice the bound keeps a second
//!   A/A of the same kernel inside ±δ (the A/A tables in the README), while
//!   δ still shrinks with the noise.
//! - **The floor.** An A/A compares one binary with itself and cannot see
//!   what a different build's code layout does. Under `tcg-icount` guest
//!   time counts instructions, which layout barely moves, and A/A boots
//!   agree within ±0.02%: the floor is 0.1%, five times that, so seed 004's
//!   +0.8% fd-allocation changes are found. In wall-clock modes (kvm, kexec,
//!   host, plain tcg) function alignment alone moves a syscall loop by 1–5%
//!   between builds (0-day's own false alarms), so the floor stays at 1% and
//!   calibration can only raise δ there.

use super::{Interval, VerdictPolicy};
use crate::run::MeasurementMode;
use crate::stats::verdict::delta_text;

/// δ is this many times the A/A's 95% bound, at least the mode's minimum δ.
pub const NOISE_MULTIPLE: f64 = 2.0;

/// δ in percent before any A/A comparison measured the kind of run: 0.5%
/// under `tcg-icount` (25 times its A/A spread; it finds seed 002's −1.0%
/// on dup1, which 1% left undecided), 1% on wall clock.
pub fn uncalibrated_percent(mode: MeasurementMode) -> f64 {
    match mode {
        MeasurementMode::TcgIcount => 0.5,
        _ => 1.0,
    }
}

/// The smallest δ in percent a calibration may give (see the module
/// documentation).
pub fn floor_percent(mode: MeasurementMode) -> f64 {
    match mode {
        MeasurementMode::TcgIcount => 0.1,
        _ => 1.0,
    }
}

/// δ in percent for a kind of run whose A/A comparison allowed changes up
/// to `aa_bound_percent`; `None` for a bound that is not a finite number of
/// 0 or more. Rounded up to the hundredth of a percent reports print, so
/// that the δ a reader sees is the δ the verdict used (an interval reaching
/// a printed `+0.15%` is not judged against an unprinted 0.1476%).
pub fn calibrated_percent(mode: MeasurementMode, aa_bound_percent: f64) -> Option<f64> {
    (aa_bound_percent.is_finite() && aa_bound_percent >= 0.0).then(|| {
        // The small slack keeps 2 × 0.105 = 0.21000000000000002 at 0.21.
        let up = ((NOISE_MULTIPLE * aa_bound_percent * 100.0 - 1e-6).ceil() / 100.0).max(0.0);
        up.max(floor_percent(mode))
    })
}

/// The verdict rule for runs measured in `mode` on a machine whose noise
/// floor for that kind of run is `noise_floor` (the ± bound in percent an
/// A/A comparison measured), when one was measured: `base` with δ the
/// mode's default before calibration and [`calibrated_percent`] after.
/// Without a mode, `base`'s δ stays. Only [`judging`] calls it: every
/// verdict is judged through that one function, so that a terminal and a
/// report agree.
fn policy(
    base: VerdictPolicy,
    mode: Option<MeasurementMode>,
    noise_floor: Option<f64>,
) -> VerdictPolicy {
    let Some(mode) = mode else {
        return base;
    };
    VerdictPolicy {
        min_change_percent: uncalibrated_percent(mode),
        calibrated_percent: noise_floor.and_then(|f| calibrated_percent(mode, f)),
        ..base
    }
}

/// Where a verdict stands among the looks its comparison may take: look
/// `look` (from 1) of `of` (see [`super::looks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub look: u32,
    pub of: u32,
}

impl Look {
    /// A comparison that adds no boots: one look at the full level.
    pub const ONLY: Look = Look { look: 1, of: 1 };

    /// Look `done_adds + 1` of a comparison that started at `first_runs` a
    /// side and may double up to `max_runs`.
    pub fn of_comparison(first_runs: u32, max_runs: Option<u32>, done_adds: u32) -> Look {
        Look {
            look: done_adds.saturating_add(1),
            of: super::looks::looks(first_runs, max_runs),
        }
    }
}

/// The one verdict rule, for the server's reports, a tracked tree's
/// history bands and `runner compare` alike: [`policy`]'s δ for runs
/// measured in `mode` with the machine's `noise_floor`, and the level
/// (confidence and the FDR bound) that `look` may spend.
pub fn judging(
    base: VerdictPolicy,
    mode: Option<MeasurementMode>,
    noise_floor: Option<f64>,
    look: Look,
) -> VerdictPolicy {
    let judged = policy(base, mode, noise_floor);
    let alpha = 1.0 - base.confidence;
    let spent = super::looks::alpha_at(alpha, look.look, look.of);
    VerdictPolicy {
        confidence: 1.0 - spent,
        fdr: base.fdr * spent / alpha,
        ..judged
    }
}

/// The noise floor an A/A comparison measured for a kind of run, in
/// percent: the largest change the interval of its headline metric
/// allows between two sets of boots of the same kernel (`None` while the
/// interval is not bounded). Machines' floors and the A/A's own answer
/// both read it here.
pub fn noise_floor(interval: Option<Interval>) -> Option<f64> {
    match interval? {
        Interval::Bounded { low, high } => Some(low.abs().max(high.abs())),
        Interval::Unbounded => None,
    }
}

/// A noise floor as pages and reports print it: `±0.075%`, to the
/// thousandth of a percent (a tcg-icount floor is a few hundredths).
pub fn floor_text(percent: f64) -> String {
    format!("±{percent:.3}%")
}

/// What an A/A calibration found for a kind of run measured in `mode`,
/// as its first answer says it: `noise floor ±0.075% → δ 0.15%`.
pub fn calibration_words(mode: MeasurementMode, floor: f64) -> String {
    match calibrated_percent(mode, floor) {
        Some(delta) => format!(
            "noise floor {} → δ {}%",
            floor_text(floor),
            delta_text(delta)
        ),
        None => format!("noise floor {}", floor_text(floor)),
    }
}

/// Whether the floor, not the measured noise, set δ.
pub fn floor_binds(mode: MeasurementMode, aa_bound_percent: f64) -> bool {
    NOISE_MULTIPLE * aa_bound_percent <= floor_percent(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judging_a_later_look_spends_less_of_the_level_with_the_same_delta() {
        let base = VerdictPolicy::default();
        let icount = Some(MeasurementMode::TcgIcount);
        let once = judging(base, icount, Some(0.02), Look::ONLY);
        assert_eq!(once, policy(base, icount, Some(0.02)));
        let look = Look::of_comparison(3, Some(12), 1);
        assert_eq!(look, Look { look: 2, of: 3 });
        let second = judging(base, icount, Some(0.02), look);
        assert_eq!(second.threshold(super::super::ChangeUnit::Percent), 0.1);
        assert!((second.confidence - (1.0 - 0.0125)).abs() < 1e-12);
        assert!((second.fdr - base.fdr * 0.25).abs() < 1e-12);
    }

    #[test]
    fn the_policy_takes_the_modes_delta_then_the_calibrated_one() {
        let base = VerdictPolicy::default();
        let icount = Some(MeasurementMode::TcgIcount);
        assert_eq!(
            policy(base, icount, None).threshold(super::super::ChangeUnit::Percent),
            0.5
        );
        assert_eq!(
            policy(base, icount, Some(0.02)).threshold(super::super::ChangeUnit::Percent),
            0.1
        );
        let kvm = Some(MeasurementMode::Kvm);
        assert_eq!(
            policy(base, kvm, Some(1.5)).threshold(super::super::ChangeUnit::Percent),
            3.0
        );
        assert_eq!(
            policy(base, kvm, Some(0.1)).threshold(super::super::ChangeUnit::Percent),
            1.0
        );
        assert_eq!(policy(base, None, Some(5.0)), base);
        assert_eq!(
            policy(base, icount, Some(f64::NAN)).calibrated_percent,
            None
        );
    }

    #[test]
    fn a_calibration_says_its_floor_and_the_delta_it_gives() {
        let icount = MeasurementMode::TcgIcount;
        let aa = Interval::Bounded {
            low: -0.0738,
            high: 0.05,
        };
        let floor = noise_floor(Some(aa)).unwrap();
        assert_eq!(floor, 0.0738);
        assert_eq!(
            calibration_words(icount, floor),
            "noise floor ±0.074% → δ 0.15%"
        );
        // Quiet: the mode's floor sets δ.
        assert_eq!(
            calibration_words(icount, 0.012),
            "noise floor ±0.012% → δ 0.1%"
        );
        assert_eq!(
            calibration_words(MeasurementMode::Kvm, 2.345),
            "noise floor ±2.345% → δ 4.69%"
        );
        assert_eq!(noise_floor(Some(Interval::Unbounded)), None);
        assert_eq!(noise_floor(None), None);
        assert_eq!(floor_text(0.3), "±0.300%");
    }

    #[test]
    fn delta_follows_the_noise_both_ways_above_the_floor() {
        let icount = MeasurementMode::TcgIcount;
        // Quiet: ±0.02% → 2 × 0.02 = 0.04 is below the floor.
        assert_eq!(calibrated_percent(icount, 0.02), Some(0.1));
        assert!(floor_binds(icount, 0.02));
        // Down from the 0.5% default, and up past it.
        assert_eq!(calibrated_percent(icount, 0.105), Some(0.21));
        assert!(calibrated_percent(icount, 0.105).unwrap() < uncalibrated_percent(icount));
        assert_eq!(calibrated_percent(icount, 0.4), Some(0.8));
        // Rounded up to what reports print: 2 × 0.0738 = 0.1476 → 0.15.
        assert_eq!(calibrated_percent(icount, 0.0738), Some(0.15));
        assert_eq!(
            calibrated_percent(MeasurementMode::Tcg, 47.4013),
            Some(94.81)
        );
        assert!(!floor_binds(icount, 0.4));
        // Wall clock: never below 1%.
        assert_eq!(calibrated_percent(MeasurementMode::Tcg, 0.1), Some(1.0));
        assert_eq!(calibrated_percent(MeasurementMode::Kvm, 3.0), Some(6.0));
        for bad in [f64::NAN, f64::INFINITY, -0.1] {
            assert_eq!(calibrated_percent(icount, bad), None);
        }
    }
}
