//! Change points in a metric's history: the commits of a tracked tree after
//! which a metric moved to a new level and stayed there.
//!
//! A history is one point per tested commit, in commit order; a point is the
//! runs (boots) measured on that commit, typically 3–10 values. A change
//! point is reported as the index of the first point after the change, with
//! the means of the runs on either side, the relative change with its 95%
//! Fieller interval, Welch's p-value and the direction.
//!
//! # Method
//!
//! E-divisive means (Matteson & James, "A Nonparametric Approach for Multiple
//! Change Point Analysis of Multivariate Data", JASA 2014) in the form Hunter
//! and Apache Otava use for performance histories (Fleming et al., "Hunter:
//! Using Change Point Detection to Hunt for Performance Regressions", ICPE
//! 2023): the significance of a cut is Welch's t-test instead of a
//! permutation test, which is as good on near-normal run means, much cheaper,
//! and deterministic (a stored change point must not move when the same
//! history is analysed again).
//!
//! 1. **Split.** A segment of commits [s, e) is cut at the τ that maximises
//!    the energy divergence Q̂ between X = the runs of [s, τ) and Y = the runs
//!    of [τ, κ) over all s < τ < κ ≤ e: the mean distance between a run of X
//!    and a run of Y, less the mean distances within X and within Y, scaled by
//!    |X||Y| / (|X| + |Y|). τ and κ are commit boundaries, never inside one
//!    commit's runs, and the runs themselves are the observations, so a commit
//!    measured ten times weighs more than one measured three times. The cut is
//!    tested with the runs of at most `window` commits on each side, inside
//!    the segment; when it passes the *weak* thresholds both halves are split
//!    again, otherwise the segment is final.
//! 2. **Merge.** Every cut is tested again, against the runs of its
//!    neighbouring segments (still at most `window` commits each side), and
//!    the weakest one that fails α or δ is removed — the failing one with the
//!    largest p first, then the smallest change — which joins two segments
//!    and changes its neighbours' tests, until every cut passes. Splitting
//!    with weaker thresholds and merging with the real ones is Hunter's
//!    answer to a recursive split that stops too early when two changes are
//!    close together.
//!
//! The test window keeps a change early in a long history from being judged
//! against the whole rest of it, drifts and other changes included; the
//! means reported are those of the windowed runs the test used (`before`,
//! `after`).
//!
//! Why not PELT (Killick et al. 2012), the other standard choice: PELT finds
//! the segmentation that minimises a penalised cost exactly, in linear time,
//! but the cost is a likelihood with a noise model and the penalty's meaning
//! depends on that noise; our metrics range from icount counts with 0.01%
//! spread to wall-clock rates with several percent, with varying runs per
//! commit, and PELT gives a segmentation without a p-value or interval per
//! change. E-divisive with a t-test gives each change point the same
//! evidence a comparison's verdict shows (p, 95% interval, δ), and its O(N²)
//! cost in runs does not matter for histories of hundreds of commits.
//!
//! # Thresholds
//!
//! A change point must have Welch's p ≤ `alpha` *and* a relative change of at
//! least `min_change_percent` (δ). α alone is not enough: under deterministic
//! (icount) measurement every difference, however tiny, is significant, so δ
//! — the machine's noise floor, or 0.3% by default — says what size of shift
//! matters. δ alone is not enough either: under wall-clock noise a 3% jump of
//! three runs is often chance. α is per cut, not corrected for the choice of
//! the cut among all commits, so its default is small (0.001, Otava's). The
//! split uses weak thresholds, 10 α (at most max(α, 0.05)) and δ / 2, so that
//! a change hiding behind a neighbour still gets cut and judged in the merge.
//!
//! # One odd commit
//!
//! A single commit whose runs are off and whose successor is back at the old
//! level is not a level shift and is not reported: a cut before it puts the
//! odd runs with the normal ones after it, whose spread then hides the shift
//! of their mean from the t-test, and the same holds for a cut after it. The
//! newest commit is the exception: being off alone at the end of the history
//! is what a fresh regression looks like, and it is reported as a change
//! point; the next commits tell whether it stays.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::change::{ChangeUnit, change};
use super::interval::{Interval, change_interval};
use super::summary::mean;
use super::welch::welch_test;

/// Thresholds of the detection (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePointPolicy {
    /// Largest Welch p-value of a change point (0.001).
    pub alpha: f64,
    /// δ: smallest relative shift that counts, in percent (0.3); the
    /// machine's noise floor when that is larger.
    pub min_change_percent: f64,
    /// Commits on each side of a change point whose runs its test uses (10).
    pub window: usize,
}

impl Default for ChangePointPolicy {
    fn default() -> Self {
        ChangePointPolicy {
            alpha: 0.001,
            min_change_percent: 0.3,
            window: 10,
        }
    }
}

impl ChangePointPolicy {
    /// The thresholds the split step uses: 10 α (never above max(α, 0.05))
    /// and δ / 2.
    fn weak(&self) -> ChangePointPolicy {
        ChangePointPolicy {
            alpha: (10.0 * self.alpha).min(self.alpha.max(0.05)),
            min_change_percent: self.min_change_percent / 2.0,
            window: self.window,
        }
    }
}

/// Which way the level moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shift {
    /// The mean after is higher.
    Up,
    /// The mean after is lower.
    Down,
}

/// A level shift in a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first point after the change; the change happened
    /// between the commits of points `index − 1` and `index`.
    pub index: usize,
    /// The points whose runs the test took as "before" (the segment before
    /// the change, at most `window` points); ends at `index`.
    pub before: Range<usize>,
    /// The points whose runs the test took as "after"; starts at `index`.
    pub after: Range<usize>,
    /// Mean of the runs of `before`.
    pub mean_before: f64,
    /// Mean of the runs of `after`.
    pub mean_after: f64,
    /// 100 · (after − before) / before.
    pub change_percent: f64,
    /// The 95% Fieller interval of `change_percent`.
    pub interval: Interval,
    /// Welch's two-sided p-value, before against after.
    pub p: f64,
    /// Up or down.
    pub shift: Shift,
}

impl ChangePoint {
    fn passes(&self, policy: &ChangePointPolicy) -> bool {
        self.p <= policy.alpha && self.change_percent.abs() >= policy.min_change_percent
    }
}

/// The change points of `history` (one slice of runs per commit, in commit
/// order), in index order. Runs that are not finite are ignored, and so are
/// points left without runs; a test needs at least two runs on each side.
pub fn change_points<P: AsRef<[f64]>>(
    history: &[P],
    policy: &ChangePointPolicy,
) -> Vec<ChangePoint> {
    let history = History::new(history);
    let energy = Energy::new(&history);
    let cuts = split(&history, &energy, &policy.weak());
    merge(&history, cuts, policy)
}

/// The points that have runs, their runs laid end to end so that the runs of
/// consecutive points are one slice.
struct History {
    /// Index in the caller's history of each point kept, then its length.
    index: Vec<usize>,
    runs: Vec<f64>,
    /// Where each kept point's runs start in `runs`, then `runs.len()`.
    offset: Vec<usize>,
}

impl History {
    fn new<P: AsRef<[f64]>>(history: &[P]) -> Self {
        let mut h = History {
            index: Vec::new(),
            runs: Vec::new(),
            offset: vec![0],
        };
        for (i, point) in history.iter().enumerate() {
            let before = h.runs.len();
            h.runs
                .extend(point.as_ref().iter().copied().filter(|v| v.is_finite()));
            if h.runs.len() > before {
                h.index.push(i);
                h.offset.push(h.runs.len());
            }
        }
        h.index.push(history.len());
        h
    }

    /// Points kept.
    fn len(&self) -> usize {
        self.offset.len() - 1
    }

    /// The runs of kept points `points`.
    fn runs(&self, points: Range<usize>) -> &[f64] {
        &self.runs[self.offset[points.start]..self.offset[points.end]]
    }

    /// Runs of kept points `points`.
    fn count(&self, points: Range<usize>) -> usize {
        self.offset[points.end] - self.offset[points.start]
    }
}

/// Sums of |x − y| over pairs of runs, for every range of kept points: what
/// Q̂ needs, computed once in O(runs²).
struct Energy {
    points: usize,
    /// `within[a · (points + 1) + b]`: the sum over all pairs of runs of
    /// points [a, b).
    within: Vec<f64>,
}

impl Energy {
    fn new(h: &History) -> Self {
        let points = h.len();
        let at = |a: usize, b: usize| a * (points + 1) + b;
        let mut within = vec![0.0; (points + 1) * (points + 1)];
        for c in 0..points {
            let runs_c = h.runs(c..c + 1);
            let own = pair_sum(runs_c);
            // Pairs with one run in [a, c) and one in c, growing a downwards.
            let mut across = 0.0;
            within[at(c, c + 1)] = own;
            for a in (0..c).rev() {
                across += cross_sum(h.runs(a..a + 1), runs_c);
                within[at(a, c + 1)] = within[at(a, c)] + own + across;
            }
        }
        Energy { points, within }
    }

    fn within(&self, points: Range<usize>) -> f64 {
        self.within[points.start * (self.points + 1) + points.end]
    }

    /// Q̂ of X = runs of [s, τ) against Y = runs of [τ, κ):
    /// (2 Σ|x − y| − 2|Y| Σ_X / (|X| − 1) − 2|X| Σ_Y / (|Y| − 1)) / (|X| + |Y|),
    /// with Σ_X, Σ_Y the sums over pairs within X and within Y (a term is 0
    /// for a side of one run, which has no pairs).
    fn q_hat(&self, h: &History, s: usize, tau: usize, kappa: usize) -> f64 {
        let (n, k) = (h.count(s..tau) as f64, h.count(tau..kappa) as f64);
        let (wx, wy) = (self.within(s..tau), self.within(tau..kappa));
        let cross = self.within(s..kappa) - wx - wy;
        let spread_x = if n > 1.0 {
            2.0 * k * wx / (n - 1.0)
        } else {
            0.0
        };
        let spread_y = if k > 1.0 {
            2.0 * n * wy / (k - 1.0)
        } else {
            0.0
        };
        (2.0 * cross - spread_x - spread_y) / (n + k)
    }

    /// The τ of the largest Q̂ in `segment` (the first on ties); `None` for
    /// a segment of one point or when no Q̂ is a number.
    fn best_cut(&self, h: &History, segment: Range<usize>) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for tau in segment.start + 1..segment.end {
            for kappa in tau + 1..=segment.end {
                let q = self.q_hat(h, segment.start, tau, kappa);
                if best.is_none_or(|(_, b)| q > b) && !q.is_nan() {
                    best = Some((tau, q));
                }
            }
        }
        best.map(|(tau, _)| tau)
    }
}

fn pair_sum(runs: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (i, x) in runs.iter().enumerate() {
        for y in &runs[i + 1..] {
            sum += (x - y).abs();
        }
    }
    sum
}

fn cross_sum(xs: &[f64], ys: &[f64]) -> f64 {
    xs.iter()
        .map(|x| ys.iter().map(|y| (x - y).abs()).sum::<f64>())
        .sum()
}

/// Recursive E-divisive split with the weak thresholds: the cuts found, in
/// order, as kept-point indices.
fn split(h: &History, energy: &Energy, weak: &ChangePointPolicy) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut open = vec![0..h.len()];
    while let Some(segment) = open.pop() {
        let Some(cut) = energy.best_cut(h, segment.clone()) else {
            continue;
        };
        if test_cut(h, segment.clone(), cut, weak.window).is_some_and(|t| t.passes(weak)) {
            cuts.push(cut);
            open.push(segment.start..cut);
            open.push(cut..segment.end);
        }
    }
    cuts.sort_unstable();
    cuts
}

/// Hunter's merge: re-tests every cut against its neighbouring segments and
/// drops the weakest failing one until all pass `policy`.
fn merge(h: &History, mut cuts: Vec<usize>, policy: &ChangePointPolicy) -> Vec<ChangePoint> {
    loop {
        let tests: Vec<Option<ChangePoint>> = cuts
            .iter()
            .enumerate()
            .map(|(i, &cut)| {
                let start = if i == 0 { 0 } else { cuts[i - 1] };
                let end = cuts.get(i + 1).copied().unwrap_or(h.len());
                test_cut(h, start..end, cut, policy.window)
            })
            .collect();
        match weakest(&tests, policy) {
            Some(i) => {
                cuts.remove(i);
            }
            None => return tests.into_iter().flatten().collect(),
        }
    }
}

/// The cut to drop first: of those with no test or p > α the one with the
/// largest p (no test counts as p = 1), else of those under δ the smallest
/// change; `None` when all pass.
fn weakest(tests: &[Option<ChangePoint>], policy: &ChangePointPolicy) -> Option<usize> {
    let p = |t: &Option<ChangePoint>| t.as_ref().map_or(1.0, |t| t.p);
    let not_significant = (0..tests.len())
        .filter(|&i| p(&tests[i]) > policy.alpha)
        .max_by(|&a, &b| p(&tests[a]).total_cmp(&p(&tests[b])));
    if not_significant.is_some() {
        return not_significant;
    }
    let size = |i: usize| tests[i].as_ref().map_or(0.0, |t| t.change_percent.abs());
    (0..tests.len())
        .filter(|&i| size(i) < policy.min_change_percent)
        .min_by(|&a, &b| size(a).total_cmp(&size(b)))
}

/// Welch's test of a cut before kept point `cut`, with the runs of at most
/// `window` points on each side inside `segment`; `None` when a side has
/// fewer than two runs or its relative change is undefined.
fn test_cut(h: &History, segment: Range<usize>, cut: usize, window: usize) -> Option<ChangePoint> {
    let before = segment.start.max(cut.saturating_sub(window))..cut;
    let after = cut..segment.end.min(cut.saturating_add(window));
    let (x, y) = (h.runs(before.clone()), h.runs(after.clone()));
    let welch = welch_test(x, y)?;
    let (mean_before, mean_after) = (mean(x)?, mean(y)?);
    let change_percent = change(ChangeUnit::Percent, mean_before, mean_after)?;
    let interval = change_interval(ChangeUnit::Percent, x, y, 0.95)?;
    if !(welch.p.is_finite() && change_percent.is_finite()) {
        return None;
    }
    Some(ChangePoint {
        index: h.index[cut],
        before: h.index[before.start]..h.index[cut],
        after: h.index[cut]..h.index[after.end],
        mean_before,
        mean_after,
        change_percent,
        interval,
        p: welch.p,
        shift: if mean_after >= mean_before {
            Shift::Up
        } else {
            Shift::Down
        },
    })
}
