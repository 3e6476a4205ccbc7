//! The vocabulary shared by the patchperf server and runner: what a run
//! produces (`run`), how runners and the server talk (`protocol`), what CI
//! sends and reads (`api`), the names
//! of metrics as 0-day prints them (`metric`) and the workloads a comparison
//! may ask for (`workload`), what a comparison is and where it stands
//! (`comparison`) and what it is called (`naming`), the largest numbers a
//! run may carry (`limits`), what an admin said about a machine
//! (`machine_state`); mailing-list
//! mail and the series in it (`mail`), what may go into a mail from outside
//! (`mail_header`); a
//! submitted patch series (`mbox`) and the digest things
//! are named by (`digest`); the statistics of a comparison (`stats`) and the
//! 0-day style report built from them (`report`); the settings files
//! read beside a command line (`settings`).
//!
//! This crate does no I/O, so both binaries (and their tests) can rely on it
//! behaving the same everywhere.
#![forbid(unsafe_code)]

pub use error::Error;

#[cfg(feature = "sqlx")]
#[macro_use]
mod text_column;

pub mod api;
pub mod bisect;
pub mod comparison;
pub mod credentials;
pub mod digest;
pub mod duration;
pub mod error;
pub mod limits;
pub mod machine_state;
pub mod mail;
pub mod mail_header;
pub mod mbox;
pub mod metric;
pub mod naming;
pub mod protocol;
pub mod report;
pub mod run;
pub mod run_length;
pub mod settings;
pub mod stats;
pub mod workload;
