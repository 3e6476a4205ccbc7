//! write1: each task writes 4 KiB at a time into a file of its own and
//! seeks back to the start once it holds 1 MiB (will-it-scale's "Separate
//! file write"): tmpfs's buffered write path over `fs/read_write.c`.

use std::io;
use std::path::Path;

use super::read::{Block, FILE_BYTES};
use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// The write1 workload.
#[derive(Debug)]
pub struct Write1 {
    files: TaskFiles,
}

/// A writing task: its fd, the block it writes and how far it got.
#[derive(Debug)]
pub struct Writing {
    fd: Fd,
    block: Block,
    written: usize,
}

impl Workload for Write1 {
    const NAME: &'static str = "write1";
    type Task<'a> = Writing;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Write1 {
            files: TaskFiles::create(scratch, Self::NAME, nr_task)?,
        })
    }

    fn task_setup(&self, task: usize) -> Result<Writing, Failure> {
        Ok(Writing {
            fd: self.files.open(task)?,
            block: Block::new(),
            written: 0,
        })
    }

    #[inline(always)]
    fn iteration(w: &mut Writing) -> Result<(), Failure> {
        w.written += sys::write(w.fd.raw(), &w.block.0)?;
        if w.written >= FILE_BYTES {
            w.written = 0;
            sys::seek_to(w.fd.raw(), 0)?;
        }
        Ok(())
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
