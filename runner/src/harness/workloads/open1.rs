//! open1: each task opens its own file (`O_RDWR`) and closes it again; all
//! files in one directory, as will-it-scale's `open1`.

use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure};

/// The open1 workload.
#[derive(Debug)]
pub struct Open1 {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for Open1 {
    const NAME: &'static str = "open1";
    type Task<'a> = &'a CStr;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "open1", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(Open1 { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_files[task])
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, libc::O_RDWR, 0)?;
        sys::close(fd)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
