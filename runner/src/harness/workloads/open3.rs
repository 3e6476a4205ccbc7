//! open3: every task opens and closes the same file, so they contend on
//! one dentry and one inode.

use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, create_file};
use crate::harness::sys::{self, Failure};

/// The open3 workload.
#[derive(Debug)]
pub struct Open3 {
    file: PathBuf,
    c_file: CString,
}

impl Workload for Open3 {
    const NAME: &'static str = "open3";
    type Task<'a> = &'a CStr;

    fn setup(scratch: &Path, _nr_task: u32) -> io::Result<Self> {
        let file = scratch.join("open3");
        create_file(&file)?;
        let c_file = c_path(&file)?;
        Ok(Open3 { file, c_file })
    }

    fn task_setup(&self, _task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_file)
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, libc::O_RDWR, 0)?;
        sys::close(fd)
    }

    fn cleanup(&self) -> io::Result<()> {
        std::fs::remove_file(&self.file)
    }
}
