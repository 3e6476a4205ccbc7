//! `perf stat`: counts events system-wide over the measured seconds, one
//! reading a second, and turns them into `perf-stat.*` metrics. `run` drives
//! perf, `parse` reads its CSV, `metrics` does the arithmetic.

pub mod metrics;
pub mod parse;
pub mod run;

pub use run::PerfStat;
