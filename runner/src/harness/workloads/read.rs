//! read1 and read2: each task reads a 1 MiB file 4 KiB at a time and
//! seeks back to the start at its end (will-it-scale's "Separate file
//! read" and "Same file read"); every read counts, the one that hits the
//! end included. read2's tasks read one file, each through a file
//! description of its own.

use std::io;
use std::marker::PhantomData;
use std::path::Path;

use super::{FileCase, TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// Bytes one read asks for.
pub(super) const BLOCK: usize = 4096;
/// The file's size.
pub(super) const FILE_BYTES: usize = 1 << 20;

/// The 4 KiB a task reads or writes, aligned as the x86-64 ABI aligns a
/// C array of that size on the stack (16 bytes), where will-it-scale's
/// buffers are: the kernel's copy to or from user memory is slower off
/// that alignment (in a tuple after an fd, a bare array sits at offset 4,
/// and read1 ran at 0.92 of the C loop's speed).
#[repr(C, align(16))]
#[derive(Debug)]
pub struct Block(pub(super) [u8; BLOCK]);

impl Block {
    /// Zeroes.
    pub(super) fn new() -> Block {
        Block([0; BLOCK])
    }
}

/// read1: each task its own file.
#[derive(Debug)]
pub struct Read1;

impl FileCase for Read1 {
    const NAME: &'static str = "read1";
    const SHARED: bool = false;
}

/// read2: one file for every task.
#[derive(Debug)]
pub struct Read2;

impl FileCase for Read2 {
    const NAME: &'static str = "read2";
    const SHARED: bool = true;
}

/// The workload reading as `C` says.
#[derive(Debug)]
pub struct Read<C> {
    files: TaskFiles,
    case: PhantomData<C>,
}

impl<C: FileCase> Workload for Read<C> {
    const NAME: &'static str = C::NAME;
    type Task<'a>
        = (Fd, Block)
    where
        C: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Read {
            files: TaskFiles::for_case::<C>(scratch, nr_task, FILE_BYTES)?,
            case: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, Block), Failure> {
        Ok((self.files.open(task)?, Block::new()))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, Block)) -> Result<(), Failure> {
        if sys::read(fd.raw(), &mut buf.0)? == 0 {
            sys::seek_to(fd.raw(), 0)?;
        }
        Ok(())
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
