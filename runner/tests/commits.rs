//! Issue 14 for real: a git range measured commit by commit. The range is
//! testkit's seed history (Debian's linux-source-6.1 as one commit, then
//! seeds 002, 003 and 004 by `git am`), a runner clones it by `file://`
//! like any remote, and each commit is one step of a per-patch
//! comparison: the kernel of the commits before it against the kernel
//! with it.
//!
//! These tests share the kernel tests' cache and take turns with them
//! (`kernel_support`); the history itself is built once per machine
//! (`patchperf_testkit::git_fixture`).

mod kernel_support;

use std::time::Instant;

use patchperf_common::digest::sha256_hex;
use patchperf_common::protocol::{BaseSource, JobSpec, JobState};
use patchperf_common::run::Side;
use patchperf_testkit::git_fixture::{self, LinuxHistory};

use kernel_support::{assert_no_leftovers, exclusive, job, pipeline, run, skip_without_tools};

/// The seed history, or `None` after saying why the test skips.
fn history() -> Option<LinuxHistory> {
    match git_fixture::seed_range() {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// The load average, for the timings a test prints.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Step `k` (1-based) of the range as a per-patch job on the history's
/// base commit: commits 1..k-1 on the base side, 1..k on the patched side.
fn step(history: &LinuxHistory, k: usize, workload: &str) -> JobSpec {
    let (before, with) = (history.series(k - 1), history.series(k));
    JobSpec {
        base: BaseSource::Git {
            url: history.url(),
            commit: history.base.sha.clone(),
        },
        base_patches_sha256: if before.is_empty() {
            String::new()
        } else {
            sha256_hex(before.as_bytes())
        },
        base_mbox: before,
        ..job(&with, workload, 1, &[Side::Base, Side::Patched])
    }
}

#[test]
fn the_first_two_commits_of_a_git_range_build_and_boot_as_per_patch_steps() {
    skip_without_tools!();
    let Some(history) = history() else { return };
    let _exclusive = exclusive();
    let p = pipeline();
    for k in 1..=2 {
        let job = step(&history, k, "fstatat-empty");
        let started = Instant::now();
        let (rec, outcome) = run(&p, &job);
        eprintln!(
            "step {k} ({}): {:.0} s, load {}",
            history.commits[k - 1].subject,
            started.elapsed().as_secs_f64(),
            load()
        );
        outcome.unwrap();
        assert_eq!(rec.results.len(), 2);
        let kernel = |side: Side| {
            rec.results
                .iter()
                .find(|(b, _)| b.side == side)
                .and_then(|(_, r)| r.kernel.clone())
                .unwrap()
        };
        let (bk, pk) = (kernel(Side::Base), kernel(Side::Patched));
        // Both kernels are built from the range's base commit, named by
        // its id; the patched one carries commits 1..k.
        assert_eq!(bk.source, history.base.sha);
        assert_eq!(pk.source, history.base.sha);
        assert_eq!(pk.patches, Some(k as u32));
        assert_eq!(pk.patches_sha256, Some(job.patches_sha256.clone()));
        assert_ne!(bk.version, pk.version);
        for (_, r) in &rec.results {
            assert!(r.metric("will-it-scale.per_process_ops").unwrap() > 0.0);
        }
        if k == 2 {
            // Step 2's base is step 1's patched kernel, from the cache.
            assert_eq!(bk.patches, Some(1));
            assert!(
                rec.states
                    .iter()
                    .any(|(s, m)| *s == JobState::Building && m == "base kernel found in the cache"),
                "{:?}",
                rec.states
            );
        }
    }
    assert_no_leftovers();
}
