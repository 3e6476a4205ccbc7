//! eventfd1: each task adds 1 to an eventfd of its own and reads the
//! counter back, 8 bytes each way (will-it-scale's "eventfd read/write of
//! 8 bytes"): `fs/eventfd.c` with no one ever waiting.

use std::io;
use std::path::Path;

use super::{Workload, again};
use crate::harness::sys::{self, Failure, Fd};

/// The eventfd1 workload.
#[derive(Debug)]
pub struct Eventfd1;

impl Workload for Eventfd1 {
    const NAME: &'static str = "eventfd1";
    type Task<'a> = Fd;

    fn setup(_scratch: &Path, _nr_task: u32) -> io::Result<Self> {
        Ok(Eventfd1)
    }

    fn task_setup(&self, _task: usize) -> Result<Fd, Failure> {
        sys::eventfd()
    }

    #[inline(always)]
    fn iteration(fd: &mut Fd) -> Result<(), Failure> {
        let one = 1u64.to_ne_bytes();
        let wrote = again(|| sys::write(fd.raw(), &one))?;
        Failure::unless_whole(libc::SYS_write, wrote, one.len())?;
        let mut counter = [0u8; 8];
        let read = again(|| sys::read(fd.raw(), &mut counter))?;
        Failure::unless_whole(libc::SYS_read, read, counter.len())
    }

    fn cleanup(&self) -> io::Result<()> {
        Ok(())
    }
}
