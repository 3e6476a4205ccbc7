//! The vocabulary shared by the patchperf server and runner: what a run
//! produces (`run`), how runners and the server talk (`protocol`), the names
//! of metrics as 0-day prints them (`metric`) and the workloads a comparison
//! may ask for (`workload`).
//!
//! This crate does no I/O, so both binaries (and their tests) can rely on it
//! behaving the same everywhere.
#![forbid(unsafe_code)]

pub mod metric;
pub mod protocol;
pub mod run;
pub mod workload;
