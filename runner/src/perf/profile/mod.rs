//! `perf record` + `perf script`: samples the whole system with call stacks
//! over the measured seconds and turns the stacks into `perf-profile.*`
//! metrics. `run` drives perf, `parse` reads perf script's output, `metrics`
//! does the arithmetic, `paths` keeps the functions of the workload's own
//! syscalls for the workload map.

pub mod metrics;
pub mod parse;
pub mod paths;
pub mod run;

pub use run::PerfProfile;
