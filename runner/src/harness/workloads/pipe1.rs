//! pipe1: each task writes one byte into a pipe of its own and reads it
//! back (will-it-scale's "pipe read/write"): `fs/pipe.c`'s write and read
//! with no reader or writer ever waiting.

use std::io;
use std::path::Path;

use super::{Workload, again};
use crate::harness::sys::{self, Failure, Fd};

/// The pipe1 workload.
#[derive(Debug)]
pub struct Pipe1;

impl Workload for Pipe1 {
    const NAME: &'static str = "pipe1";
    type Task<'a> = (Fd, Fd);

    fn setup(_scratch: &Path, _nr_task: u32) -> io::Result<Self> {
        Ok(Pipe1)
    }

    fn task_setup(&self, _task: usize) -> Result<(Fd, Fd), Failure> {
        sys::pipe()
    }

    #[inline(always)]
    fn iteration((read_end, write_end): &mut (Fd, Fd)) -> Result<(), Failure> {
        let mut byte = [0u8; 1];
        let wrote = again(|| sys::write(write_end.raw(), &byte))?;
        Failure::unless_whole(libc::SYS_write, wrote, 1)?;
        let read = again(|| sys::read(read_end.raw(), &mut byte))?;
        Failure::unless_whole(libc::SYS_read, read, 1)
    }

    fn cleanup(&self) -> io::Result<()> {
        Ok(())
    }
}
