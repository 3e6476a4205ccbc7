//! Statistics of a comparison, pure and tested against hand-computed values:
//! 0-day's numbers (`summary`, `change`, `zero_day`) so our table reads like
//! theirs, and our verdict (`welch`, `mann_whitney`, `interval`, `fdr`,
//! `verdict`) so it says more truthfully whether a change is real; and, over
//! a tracked tree's history, where a metric's level shifted (`changepoint`);
//! and the one worst-first order of results (`severity`).

pub mod calibration;
pub mod change;
pub mod changepoint;
pub mod distribution;
pub mod fdr;
pub mod interval;
pub mod looks;
pub mod mann_whitney;
mod memo;
mod rank_sum;
pub mod severity;
pub mod summary;
pub mod verdict;
pub mod welch;
pub mod zero_day;

pub use change::{ChangeUnit, change};
pub use changepoint::{ChangePoint, ChangePointPolicy, Shift, change_points};
pub use fdr::benjamini_hochberg;
pub use interval::{Interval, change_interval};
pub use mann_whitney::{MannWhitney, mann_whitney};
pub use severity::{Outcome, Severity, sort_worst_first, worst_first};
pub use summary::{mean, population_stddev, sample_variance, shown_stddev_percent, stddev_percent};
pub use verdict::{Evidence, Judgement, Verdict, VerdictPolicy, judge};
pub use welch::{WelchTest, welch_test};
pub use zero_day::{ZeroDayCheck, zero_day_check};
