//! open-creat: open of the task's existing file with `O_RDWR|O_CREAT`, then
//! close. `O_CREAT` on an existing file is what seed 001 made fast.

use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure};

/// The open-creat workload.
#[derive(Debug)]
pub struct OpenCreat {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for OpenCreat {
    const NAME: &'static str = "open-creat";
    type Task<'a> = &'a CStr;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "open-creat", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(OpenCreat { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_files[task])
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, libc::O_RDWR | libc::O_CREAT, 0o600)?;
        sys::close(fd)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
