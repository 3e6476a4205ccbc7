//! open1, open3 and open-creat: each task opens a file and closes it
//! again, all files in one directory as will-it-scale's `open1`; they
//! differ only in the flags of the open and in whose file it is.

use std::ffi::CStr;
use std::io;
use std::marker::PhantomData;
use std::path::Path;

use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure};

/// The flags one open-and-close workload opens with.
pub trait OpenFlags: Sync {
    /// The workload's name.
    const NAME: &'static str;
    /// `open(2)`'s flags.
    const FLAGS: i32;
    /// The mode, for `O_CREAT`.
    const MODE: libc::mode_t;
    /// Every task opens the same file (contending on one dentry and one
    /// inode) instead of its own.
    const ONE_FILE: bool = false;
}

/// open1: `O_RDWR`.
#[derive(Debug)]
pub struct Open1;

impl OpenFlags for Open1 {
    const NAME: &'static str = "open1";
    const FLAGS: i32 = libc::O_RDWR;
    const MODE: libc::mode_t = 0;
}

/// open3: `O_RDWR`, every task the same file.
#[derive(Debug)]
pub struct Open3;

impl OpenFlags for Open3 {
    const NAME: &'static str = "open3";
    const FLAGS: i32 = libc::O_RDWR;
    const MODE: libc::mode_t = 0;
    const ONE_FILE: bool = true;
}

/// open-creat: `O_RDWR|O_CREAT` on the task's existing file, what seed 001
/// made fast.
#[derive(Debug)]
pub struct OpenCreat;

impl OpenFlags for OpenCreat {
    const NAME: &'static str = "open-creat";
    const FLAGS: i32 = libc::O_RDWR | libc::O_CREAT;
    const MODE: libc::mode_t = 0o600;
}

/// The workload opening with `O`'s flags.
#[derive(Debug)]
pub struct OpenClose<O> {
    files: TaskFiles,
    flags: PhantomData<O>,
}

impl<O: OpenFlags> Workload for OpenClose<O> {
    const NAME: &'static str = O::NAME;
    type Task<'a>
        = &'a CStr
    where
        O: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(OpenClose {
            files: TaskFiles::create(scratch, O::NAME, if O::ONE_FILE { 1 } else { nr_task })?,
            flags: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<&CStr, Failure> {
        Ok(self.files.path(if O::ONE_FILE { 0 } else { task }))
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, O::FLAGS, O::MODE)?;
        sys::close(fd)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
