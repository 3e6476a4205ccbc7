//! The directory the kernel tests share between test binaries and checkouts:
//! the runner's cache of built kernels and git mirrors, and the git
//! histories of [`git_fixture`](crate::git_fixture), so a machine pays for
//! each cold build once.

use std::path::{Path, PathBuf};

/// Shared by every checkout on the machine: the team's test runs build the
/// test kernels once and take turns on them.
pub const SHARED_CACHE: &str = "/var/cache/patchperf-test";

/// `$PATCHPERF_TEST_CACHE`, else [`SHARED_CACHE`], else (where that cannot
/// be created) `target/patchperf-test-cache`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("PATCHPERF_TEST_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ if std::fs::create_dir_all(SHARED_CACHE).is_ok() => PathBuf::from(SHARED_CACHE),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/patchperf-test-cache"),
    }
}
