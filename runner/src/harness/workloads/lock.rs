//! lock1 and lock2: each task takes a POSIX write lock on the first byte
//! of a file with `fcntl(F_SETLKW)` and releases it (will-it-scale's
//! "Separate file write lock/unlock" and "Same file write lock/unlock"),
//! counting 2 operations a loop as will-it-scale does: `fs/locks.c`.
//! lock2's tasks lock one file, each through a file description of its
//! own; as processes they contend for its lock list, as threads of one
//! process they are one lock owner.

use std::io;
use std::marker::PhantomData;
use std::path::Path;

use super::{FileCase, TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// lock1: each task its own file.
#[derive(Debug)]
pub struct Lock1;

impl FileCase for Lock1 {
    const NAME: &'static str = "lock1";
    const SHARED: bool = false;
}

/// lock2: one file for every task.
#[derive(Debug)]
pub struct Lock2;

impl FileCase for Lock2 {
    const NAME: &'static str = "lock2";
    const SHARED: bool = true;
}

/// A locking task: its fd and the two requests it alternates.
#[derive(Debug)]
pub struct Locking {
    fd: Fd,
    lock: libc::flock,
    unlock: libc::flock,
}

/// The workload locking as `C` says.
#[derive(Debug)]
pub struct Lock<C> {
    files: TaskFiles,
    case: PhantomData<C>,
}

impl<C: FileCase> Workload for Lock<C> {
    const NAME: &'static str = C::NAME;
    const OPS_PER_ITERATION: u64 = 2;
    type Task<'a>
        = Locking
    where
        C: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Lock {
            files: TaskFiles::for_case::<C>(scratch, nr_task, 0)?,
            case: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<Locking, Failure> {
        Ok(Locking {
            fd: self.files.open(task)?,
            lock: sys::record_lock(libc::F_WRLCK, 0, 1),
            unlock: sys::record_lock(libc::F_UNLCK, 0, 1),
        })
    }

    #[inline(always)]
    fn iteration(l: &mut Locking) -> Result<(), Failure> {
        sys::set_lock_wait(l.fd.raw(), &l.lock)?;
        sys::set_lock_wait(l.fd.raw(), &l.unlock)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
