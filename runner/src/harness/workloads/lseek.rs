//! lseek1 and lseek2: each task seeks its fd to the start of a 4 KiB file
//! (will-it-scale's "Separate file lseek" and "Same file lseek"):
//! `fdget_pos` and the file system's llseek (`generic_file_llseek_size`)
//! and nothing else. lseek2's tasks seek in one file, each through a file
//! description of its own, so none shares an `f_pos` lock.

use std::io;
use std::marker::PhantomData;
use std::path::Path;

use super::read::BLOCK;
use super::{FileCase, TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// lseek1: each task its own file.
#[derive(Debug)]
pub struct Lseek1;

impl FileCase for Lseek1 {
    const NAME: &'static str = "lseek1";
    const SHARED: bool = false;
}

/// lseek2: one file for every task.
#[derive(Debug)]
pub struct Lseek2;

impl FileCase for Lseek2 {
    const NAME: &'static str = "lseek2";
    const SHARED: bool = true;
}

/// The workload seeking as `C` says.
#[derive(Debug)]
pub struct Lseek<C> {
    files: TaskFiles,
    case: PhantomData<C>,
}

impl<C: FileCase> Workload for Lseek<C> {
    const NAME: &'static str = C::NAME;
    type Task<'a>
        = Fd
    where
        C: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Lseek {
            files: TaskFiles::for_case::<C>(scratch, nr_task, BLOCK)?,
            case: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<Fd, Failure> {
        self.files.open(task)
    }

    #[inline(always)]
    fn iteration(fd: &mut Fd) -> Result<(), Failure> {
        sys::seek_to(fd.raw(), 0)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
