//! pwrite1: each task writes 4 KiB at the start of a file of its own with
//! `pwrite64` (will-it-scale's "Separate file pwrite"): the same page
//! overwritten, no allocation after the first.

use std::io;
use std::path::Path;

use super::read::{BLOCK, Block};
use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// The pwrite1 workload.
#[derive(Debug)]
pub struct Pwrite1 {
    files: TaskFiles,
}

impl Workload for Pwrite1 {
    const NAME: &'static str = "pwrite1";
    type Task<'a> = (Fd, Block);

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Pwrite1 {
            files: TaskFiles::create(scratch, Self::NAME, nr_task)?,
        })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, Block), Failure> {
        Ok((self.files.open(task)?, Block::new()))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, Block)) -> Result<(), Failure> {
        let wrote = sys::pwrite(fd.raw(), &buf.0, 0)?;
        Failure::unless_whole(libc::SYS_pwrite64, wrote, BLOCK)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
