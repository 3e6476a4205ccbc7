//! The kernel pipeline: for a job, build the kernel without and with the
//! patch series, boot each, run the workloads inside, collect and upload the
//! results. It reads as its steps — fetch → apply → configure → build →
//! boot → run → collect → upload — each a function with typed input and
//! output, so a failure names its step ([`FailureReason`]).
//!
//! [`FailureReason`]: patchperf_common::protocol::FailureReason

pub mod build;
pub mod cache;
pub mod config;
pub mod guest;
pub mod jobfile;
pub mod kvm_probe;
pub mod make;
pub mod patch;
pub mod pipeline;
pub mod qemu;
pub mod source;
pub mod view;
