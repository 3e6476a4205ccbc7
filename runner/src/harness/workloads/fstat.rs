//! fstat: the native `fstat` system call on an fd of the task's own file,
//! issued raw because glibc would turn it into `newfstatat` (seed 003).

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure, Fd};

/// The fstat workload.
#[derive(Debug)]
pub struct Fstat {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for Fstat {
    const NAME: &'static str = "fstat";
    type Task<'a> = (Fd, libc::stat);

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "fstat", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(Fstat { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, libc::stat), Failure> {
        Ok((
            sys::open_owned(&self.c_files[task], libc::O_RDWR)?,
            sys::zeroed_stat(),
        ))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, libc::stat)) -> Result<(), Failure> {
        sys::fstat(fd.raw(), buf)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
