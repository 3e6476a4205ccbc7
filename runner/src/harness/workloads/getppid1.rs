//! getppid1: each task asks for its parent's pid (will-it-scale's
//! "getppid"). No file system at all: the floor of a bare system call's
//! entry and exit, against which the fs/ workloads' costs read.

use std::io;
use std::path::Path;

use super::Workload;
use crate::harness::sys::{self, Failure};

/// The getppid1 workload.
#[derive(Debug)]
pub struct Getppid1;

impl Workload for Getppid1 {
    const NAME: &'static str = "getppid1";
    type Task<'a> = ();

    fn setup(_scratch: &Path, _nr_task: u32) -> io::Result<Self> {
        Ok(Getppid1)
    }

    fn task_setup(&self, _task: usize) -> Result<(), Failure> {
        Ok(())
    }

    #[inline(always)]
    fn iteration((): &mut ()) -> Result<(), Failure> {
        sys::getppid()
    }

    fn cleanup(&self) -> io::Result<()> {
        Ok(())
    }
}
