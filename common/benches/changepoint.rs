//! How well change-point detection finds level shifts: `cargo bench -p
//! patchperf-common --bench changepoint`. Builds synthetic histories of
//! 20 commits × 3 runs with one step (up or down) at a random commit, or
//! none, in icount-like noise (a relative sd of 0.01–0.05% per history) and
//! in wall-clock-like noise (2%), runs `change_points` on each and prints,
//! per case, how often the step was found at the right commit, one commit
//! off, or missed, the false alarms per history (every other shift
//! reported) and the odd points per history (single commits set aside as
//! not being level shifts). Two policies: the default, and the default with δ
//! raised to 2% as a wall-clock machine's noise floor would raise it.

#[path = "../tests/synthetic/rng.rs"]
mod rng;

use std::time::Instant;

use patchperf_common::stats::{ChangePointPolicy, change_points};
use rng::Rng;

const HISTORIES: usize = 200;
const COMMITS: usize = 20;
const RUNS: usize = 3;
const STEPS_PERCENT: [f64; 4] = [0.0, 0.5, 1.0, 5.0];

/// Relative noise of the runs: a history's sd is drawn in [low, high].
struct Noise {
    name: &'static str,
    low: f64,
    high: f64,
}

const NOISES: [Noise; 2] = [
    Noise {
        name: "icount 0.01-0.05%",
        low: 0.0001,
        high: 0.0005,
    },
    Noise {
        name: "wall clock 2%",
        low: 0.02,
        high: 0.02,
    },
];

#[derive(Default)]
struct Tally {
    exact: usize,
    off_by_one: usize,
    missed: usize,
    false_alarms: usize,
    odd: usize,
}

/// One history: its runs and the index of the first commit after the step.
fn history(rng: &mut Rng, noise: &Noise, step_percent: f64) -> (Vec<Vec<f64>>, usize) {
    let sd = noise.low + (noise.high - noise.low) * rng.uniform();
    let at = 1 + (rng.uniform() * (COMMITS - 1) as f64) as usize;
    let sign = if rng.chance(0.5) { 1.0 } else { -1.0 };
    let after = 1e6 * (1.0 + sign * step_percent / 100.0);
    let runs = (0..COMMITS)
        .map(|i| {
            let level = if i < at { 1e6 } else { after };
            (0..RUNS)
                .map(|_| level * (1.0 + sd * rng.normal()))
                .collect()
        })
        .collect();
    (runs, at)
}

fn tally(noise: &Noise, step_percent: f64, policy: &ChangePointPolicy, seed: u64) -> Tally {
    let mut rng = Rng::new(seed);
    let mut t = Tally::default();
    for _ in 0..HISTORIES {
        let (h, at) = history(&mut rng, noise, step_percent);
        let found: Vec<usize> = change_points(&h, policy)
            .shifts
            .iter()
            .map(|c| c.index)
            .collect();
        if step_percent == 0.0 {
            t.false_alarms += found.len();
            continue;
        }
        // The change point that counts as the detection; all others are false alarms.
        let detection = if found.contains(&at) {
            t.exact += 1;
            true
        } else if found.iter().any(|&i| i.abs_diff(at) == 1) {
            t.off_by_one += 1;
            true
        } else {
            t.missed += 1;
            false
        };
        t.false_alarms += found.len() - usize::from(detection);
    }
    t
}

fn main() {
    let noise_floor = ChangePointPolicy {
        min_change_percent: 2.0,
        ..ChangePointPolicy::default()
    };
    println!(
        "change points: {HISTORIES} histories of {COMMITS} commits x {RUNS} runs per case, \
         one step at a random commit (up or down) or none"
    );
    let started = Instant::now();
    let mut histories = 0;
    for policy in [ChangePointPolicy::default(), noise_floor] {
        println!(
            "\nalpha = {}, delta = {}%, window = {} commits",
            policy.alpha, policy.min_change_percent, policy.window
        );
        println!(
            "{:<18} {:>6} {:>9} {:>11} {:>8} {:>19} {:>10}",
            "noise", "step", "exact", "off by one", "missed", "false alarms/hist", "odd/hist"
        );
        // The same histories for both policies.
        let mut seed = 1;
        for noise in &NOISES {
            for step in STEPS_PERCENT {
                let t = tally(noise, step, &policy, seed);
                seed += 1;
                histories += HISTORIES;
                print_row(noise, step, &t);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "\n{histories} histories in {elapsed:.2} s ({:.0} µs each)",
        elapsed * 1e6 / histories as f64
    );
}

fn print_row(noise: &Noise, step: f64, t: &Tally) {
    let share = |n: usize| {
        if step == 0.0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * n as f64 / HISTORIES as f64)
        }
    };
    println!(
        "{:<18} {:>5}% {:>9} {:>11} {:>8} {:>19.3} {:>10.3}",
        noise.name,
        step,
        share(t.exact),
        share(t.off_by_one),
        share(t.missed),
        t.false_alarms as f64 / HISTORIES as f64,
        t.odd as f64 / HISTORIES as f64
    );
}
