//! fstatat-empty: `newfstatat(fd, "", AT_EMPTY_PATH)` on an fd of the
//! task's own file: what glibc issues for `fstat()` (seed 003).

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure, Fd};

/// The fstatat-empty workload.
#[derive(Debug)]
pub struct FstatatEmpty {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for FstatatEmpty {
    const NAME: &'static str = "fstatat-empty";
    type Task<'a> = (Fd, libc::stat);

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "fstatat-empty", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(FstatatEmpty { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, libc::stat), Failure> {
        Ok((
            sys::open_owned(&self.c_files[task], libc::O_RDWR)?,
            sys::zeroed_stat(),
        ))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, libc::stat)) -> Result<(), Failure> {
        sys::newfstatat_empty(fd.raw(), buf)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
