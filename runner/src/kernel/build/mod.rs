//! Build: how `make` runs on a tree ([`make`]); built kernels, their cache
//! keys and build trees ([`built`]); and which source files a built
//! kernel's functions come from, for `runner workload-map` ([`code_files`]).

pub mod built;
pub mod code_files;
pub mod make;
