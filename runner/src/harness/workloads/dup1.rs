//! dup1: each task duplicates an fd of its own file and closes the copy.
//! In threads mode the tasks share one file table (seed 004).

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure, Fd};

/// The dup1 workload.
#[derive(Debug)]
pub struct Dup1 {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for Dup1 {
    const NAME: &'static str = "dup1";
    type Task<'a> = Fd;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "dup1", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(Dup1 { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<Fd, Failure> {
        sys::open_owned(&self.c_files[task], libc::O_RDWR)
    }

    #[inline(always)]
    fn iteration(fd: &mut Fd) -> Result<(), Failure> {
        let copy = sys::dup(fd.raw())?;
        sys::close(copy)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
