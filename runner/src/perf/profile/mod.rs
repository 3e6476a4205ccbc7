//! `perf record` + `perf script`: samples the whole system with call stacks
//! over the measured seconds and turns the stacks into `perf-profile.*`
//! metrics. `run` drives perf, `parse` reads perf script's output, `metrics`
//! does the arithmetic.

pub mod metrics;
pub mod parse;
pub mod run;

pub use run::PerfProfile;
