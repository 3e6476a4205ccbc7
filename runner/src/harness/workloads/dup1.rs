//! dup1: each task duplicates an fd of its own file and closes the copy.
//! In threads mode the tasks share one file table (seed 004).

use std::io;
use std::path::Path;

use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// The dup1 workload.
#[derive(Debug)]
pub struct Dup1 {
    files: TaskFiles,
}

impl Workload for Dup1 {
    const NAME: &'static str = "dup1";
    type Task<'a> = Fd;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Dup1 {
            files: TaskFiles::create(scratch, Self::NAME, nr_task)?,
        })
    }

    fn task_setup(&self, task: usize) -> Result<Fd, Failure> {
        self.files.open(task)
    }

    #[inline(always)]
    fn iteration(fd: &mut Fd) -> Result<(), Failure> {
        let copy = sys::dup(fd.raw())?;
        sys::close(copy)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
