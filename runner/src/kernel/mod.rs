//! The kernel pipeline: for a job, build the kernel without and with the
//! patch series, boot each, run the workloads inside, collect and upload the
//! results. It reads as its steps — fetch → apply → configure → build →
//! boot → run → collect → upload — each a function with typed input and
//! output, so a failure names its step ([`FailureReason`]).
//!
//! - [`pipeline`]: the steps strung together ([`pipeline::prepare`],
//!   [`pipeline::boot`], [`pipeline::kexec`]) and how a job fails;
//! - [`fetch`]: the source tree ([`fetch::source`]: tarballs, git), seen by
//!   the tools through a [`fetch::tree_view`];
//! - [`apply`]: the series put on the patched tree ([`apply::patch`]);
//! - [`configure`]: one benchmark config for both sides
//!   ([`configure::config`]);
//! - [`build`]: `make` ([`build::make`]), built kernels and their keys
//!   ([`build::built`]), and the source files a built kernel's functions
//!   come from ([`build::code_files`], for `runner workload-map`);
//! - [`boot`]: [`boot::qemu`] (and [`boot::kvm_probe`], whether KVM is fast
//!   here), talking to the guest through [`boot::guest_protocol`];
//! - [`cache`]: the cache directory every step reads and writes (sources,
//!   git mirrors, built kernels, ccache, scratch trees), so it stays here.
//!
//! [`FailureReason`]: patchperf_common::protocol::FailureReason

pub mod apply;
pub mod boot;
pub mod build;
pub mod cache;
pub mod configure;
pub mod fetch;
pub mod pipeline;
