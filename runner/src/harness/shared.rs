//! The memory the tasks and the parent share: one cache line per task for
//! its op counter and its state, plus a line of flags. It is an anonymous
//! `MAP_SHARED` mapping made before the tasks are forked, so forked
//! children and threads alike write into the same pages the parent reads.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::sys::Failure;

/// Two 64-byte lines: enough that the adjacent-line prefetcher never pulls
/// a neighbour's counter into a task's line (will-it-scale uses 128 too).
const LINE: usize = 128;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Not yet through its set-up.
    Starting,
    /// Set up and waiting for (or past) the start signal.
    Ready,
    /// Its set-up failed.
    SetupFailed(Failure),
    /// Its loop stopped on a failed system call.
    LoopFailed(Failure),
}

const STARTING: u32 = 0;
const READY: u32 = 1;
const SETUP_FAILED: u32 = 2;
const LOOP_FAILED: u32 = 3;

/// One task's cache line.
#[repr(C, align(128))]
#[derive(Debug)]
pub struct Slot {
    ops: AtomicU64,
    state: AtomicU32,
    errno: AtomicI32,
    syscall: AtomicI64,
}

impl Slot {
    /// Publishes the task's op count (only the task writes it).
    #[inline(always)]
    pub fn set_ops(&self, ops: u64) {
        self.ops.store(ops, Ordering::Relaxed);
    }

    /// The task's op count so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// Marks the task as set up.
    pub fn set_ready(&self) {
        self.state.store(READY, Ordering::Release);
    }

    /// Records why the task stopped.
    pub fn set_failed(&self, in_loop: bool, failure: Failure) {
        self.errno.store(failure.errno, Ordering::Relaxed);
        self.syscall.store(failure.syscall, Ordering::Relaxed);
        let state = if in_loop { LOOP_FAILED } else { SETUP_FAILED };
        self.state.store(state, Ordering::Release);
    }

    /// Where the task is.
    pub fn state(&self) -> TaskState {
        let state = self.state.load(Ordering::Acquire);
        let failure = || Failure {
            syscall: self.syscall.load(Ordering::Relaxed),
            errno: self.errno.load(Ordering::Relaxed),
        };
        match state {
            STARTING => TaskState::Starting,
            READY => TaskState::Ready,
            SETUP_FAILED => TaskState::SetupFailed(failure()),
            LOOP_FAILED => TaskState::LoopFailed(failure()),
            _ => unreachable!("task state {state}"),
        }
    }
}

/// Flags the parent sets for all tasks, in a line of their own.
#[repr(C, align(128))]
#[derive(Debug)]
pub struct Flags {
    /// Threads mode: the tasks leave their loops when this is set.
    pub stop: AtomicBool,
}

/// The shared mapping: [`Flags`] then one [`Slot`] per task.
#[derive(Debug)]
pub struct SharedArea {
    base: NonNull<u8>,
    len: usize,
    nr_task: usize,
}

// SAFETY: the mapping holds only atomics, and `SharedArea` hands out shared
// references to them alone, so using it from several threads is sound.
unsafe impl Sync for SharedArea {}
// SAFETY: the mapping is not tied to the thread that made it.
unsafe impl Send for SharedArea {}

impl SharedArea {
    /// Maps a zeroed area for `nr_task` tasks.
    pub fn new(nr_task: usize) -> io::Result<Self> {
        const _: () = assert!(std::mem::size_of::<Slot>() == LINE);
        const _: () = assert!(std::mem::size_of::<Flags>() == LINE);
        let len = LINE * (nr_task + 1);
        // SAFETY: a fresh anonymous mapping: no existing memory is affected,
        // and the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(SharedArea { base, len, nr_task })
    }

    /// The flags line.
    pub fn flags(&self) -> &Flags {
        // SAFETY: the mapping starts with a page-aligned, zero-filled line
        // that lives as long as `self`; all-zero atomics are valid `Flags`.
        unsafe { &*self.base.as_ptr().cast::<Flags>() }
    }

    /// Task `i`'s line.
    pub fn slot(&self, i: usize) -> &Slot {
        assert!(i < self.nr_task, "task {i} of {}", self.nr_task);
        // SAFETY: line i+1 lies inside the mapping (checked above), is
        // 128-byte aligned, zero-filled at mapping time and lives as long as
        // `self`; all-zero atomics are a valid `Slot`.
        unsafe { &*self.base.as_ptr().add(LINE * (i + 1)).cast::<Slot>() }
    }

    /// Every task's op count, in task order.
    pub fn read_ops(&self, into: &mut Vec<u64>) {
        into.clear();
        into.extend((0..self.nr_task).map(|i| self.slot(i).ops()));
    }
}

impl Drop for SharedArea {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; no reference
        // into it outlives `self` (they all borrow it).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_has_its_own_aligned_line() {
        let area = SharedArea::new(3).unwrap();
        let a = area.slot(0) as *const Slot as usize;
        let b = area.slot(1) as *const Slot as usize;
        assert_eq!(a % 128, 0);
        assert_eq!(b - a, 128);
        area.slot(1).set_ops(7);
        let mut ops = Vec::new();
        area.read_ops(&mut ops);
        assert_eq!(ops, [0, 7, 0]);
    }

    #[test]
    fn a_failure_is_reported_with_its_syscall() {
        let area = SharedArea::new(1).unwrap();
        assert_eq!(area.slot(0).state(), TaskState::Starting);
        let f = Failure {
            syscall: libc::SYS_dup,
            errno: libc::EMFILE,
        };
        area.slot(0).set_failed(true, f);
        assert_eq!(area.slot(0).state(), TaskState::LoopFailed(f));
    }
}
