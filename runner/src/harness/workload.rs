//! What a workload is to the harness: the [`Workload`] trait every
//! testcase in `workloads` implements and the driver runs.

use std::io;
use std::path::Path;

use super::sys::Failure;

/// One will-it-scale testcase.
///
/// `task_setup` and `iteration` run in the tasks. In processes mode a task
/// is a forked child of a possibly multi-threaded parent, so they must only
/// make system calls on data prepared by `setup`: no allocation, no locks,
/// no panics.
pub trait Workload: Sized + Sync {
    /// The name from `patchperf_common::workload::WORKLOADS`.
    const NAME: &'static str;
    /// Operations one [`Workload::iteration`] counts: will-it-scale's
    /// lock1 and lock2 count the lock and the unlock, 2 a loop; every
    /// other testcase counts its loop once.
    const OPS_PER_ITERATION: u64 = 1;
    /// Descriptors one task holds at most (poll2 holds 128), so that the
    /// harness can raise `RLIMIT_NOFILE` for the tasks beforehand.
    const FDS_PER_TASK: u64 = 2;
    /// What one task keeps between iterations (an open fd, a stat buffer).
    type Task<'a>
    where
        Self: 'a;
    /// In the parent, before any task starts: make what `nr_task` tasks
    /// need under `scratch`.
    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self>;
    /// In task number `task` (0-based), before the start signal.
    fn task_setup(&self, task: usize) -> Result<Self::Task<'_>, Failure>;
    /// The loop body; the harness counts [`Workload::OPS_PER_ITERATION`]
    /// ops per call.
    fn iteration(task: &mut Self::Task<'_>) -> Result<(), Failure>;
    /// In the parent, after every task stopped: remove what `setup` made.
    fn cleanup(&self) -> io::Result<()>;
}
