//! pread1: each task reads the first 4 KiB of a file of its own with
//! `pread64`, never moving the file position (will-it-scale's "Separate
//! file pread"): `fdget`, not read1's `fdget_pos`.

use std::io;
use std::path::Path;

use super::read::{BLOCK, Block};
use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// The pread1 workload.
#[derive(Debug)]
pub struct Pread1 {
    files: TaskFiles,
}

impl Workload for Pread1 {
    const NAME: &'static str = "pread1";
    type Task<'a> = (Fd, Block);

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Pread1 {
            files: TaskFiles::filled(scratch, Self::NAME, nr_task, BLOCK)?,
        })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, Block), Failure> {
        Ok((self.files.open(task)?, Block::new()))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, Block)) -> Result<(), Failure> {
        let read = sys::pread(fd.raw(), &mut buf.0, 0)?;
        Failure::unless_whole(libc::SYS_pread64, read, BLOCK)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
