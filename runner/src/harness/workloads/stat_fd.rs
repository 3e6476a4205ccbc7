//! fstat, fstatat-empty and statx-empty: each task stats an fd of its own
//! file, by one of the three calls that do it (seed 003: glibc's `fstat()`
//! is `newfstatat(fd, "", AT_EMPTY_PATH)`, the native `fstat` call must be
//! issued raw). They differ only in the call and its buffer.

use std::io;
use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::path::Path;

use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// One way of asking the kernel for an open file's attributes.
pub trait StatCall: Sync {
    /// The workload's name.
    const NAME: &'static str;
    /// What the call fills.
    type Buf;
    /// An empty buffer.
    fn buffer() -> Self::Buf;
    /// The call.
    fn call(fd: RawFd, buf: &mut Self::Buf) -> Result<(), Failure>;
}

/// fstat: the native `fstat` system call.
#[derive(Debug)]
pub struct Fstat;

impl StatCall for Fstat {
    const NAME: &'static str = "fstat";
    type Buf = libc::stat;
    fn buffer() -> libc::stat {
        sys::zeroed_stat()
    }
    #[inline(always)]
    fn call(fd: RawFd, buf: &mut libc::stat) -> Result<(), Failure> {
        sys::fstat(fd, buf)
    }
}

/// fstatat-empty: `newfstatat(fd, "", AT_EMPTY_PATH)`, what glibc issues
/// for `fstat()`.
#[derive(Debug)]
pub struct FstatatEmpty;

impl StatCall for FstatatEmpty {
    const NAME: &'static str = "fstatat-empty";
    type Buf = libc::stat;
    fn buffer() -> libc::stat {
        sys::zeroed_stat()
    }
    #[inline(always)]
    fn call(fd: RawFd, buf: &mut libc::stat) -> Result<(), Failure> {
        sys::newfstatat_empty(fd, buf)
    }
}

/// statx-empty: `statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS)`.
#[derive(Debug)]
pub struct StatxEmpty;

impl StatCall for StatxEmpty {
    const NAME: &'static str = "statx-empty";
    type Buf = libc::statx;
    fn buffer() -> libc::statx {
        sys::zeroed_statx()
    }
    #[inline(always)]
    fn call(fd: RawFd, buf: &mut libc::statx) -> Result<(), Failure> {
        sys::statx_empty(fd, buf)
    }
}

/// The workload stating with `C`.
#[derive(Debug)]
pub struct StatFd<C> {
    files: TaskFiles,
    call: PhantomData<C>,
}

impl<C: StatCall> Workload for StatFd<C> {
    const NAME: &'static str = C::NAME;
    type Task<'a>
        = (Fd, C::Buf)
    where
        C: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(StatFd {
            files: TaskFiles::create(scratch, C::NAME, nr_task)?,
            call: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, C::Buf), Failure> {
        Ok((self.files.open(task)?, C::buffer()))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, C::Buf)) -> Result<(), Failure> {
        C::call(fd.raw(), buf)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
