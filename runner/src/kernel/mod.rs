//! The kernel pipeline: for a job, build the kernel without and with the
//! patch series, boot each, run the workloads inside, collect and upload the
//! results. It reads as its steps — fetch → apply → configure → build →
//! boot → run → collect → upload — each a function with typed input and
//! output, so a failure names its step ([`FailureReason`]).
//!
//! - [`pipeline`]: the steps strung together ([`pipeline::prepare`],
//!   [`pipeline::boot`], [`pipeline::kexec`]) and how a job fails;
//! - fetch: [`source`] (tarballs, git), seen by tools through a
//!   [`tree_view`]; apply: [`patch`]; configure: [`config`]; build:
//!   [`make`], built kernels cached by [`build`] in the [`cache`];
//! - boot: [`qemu`] (and [`kvm_probe`], whether KVM is fast here), talking
//!   to the guest through [`guest_protocol`];
//! - [`jobfile`]: a job described in a file, for `runner job`;
//! - [`code_files`]: the source files a built kernel's functions come
//!   from, for `runner workload-map`.
//!
//! [`FailureReason`]: patchperf_common::protocol::FailureReason

pub mod build;
pub mod cache;
pub mod code_files;
pub mod config;
pub mod git_cache;
pub mod guest_protocol;
pub mod jobfile;
pub mod kvm_probe;
pub mod make;
pub mod patch;
pub mod pipeline;
pub mod qemu;
pub mod source;
pub mod tree_view;
