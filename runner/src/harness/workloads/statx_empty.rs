//! statx-empty: `statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS)` on an fd
//! of the task's own file.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, per_task_files, remove_files};
use crate::harness::sys::{self, Failure, Fd};

/// The statx-empty workload.
#[derive(Debug)]
pub struct StatxEmpty {
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for StatxEmpty {
    const NAME: &'static str = "statx-empty";
    type Task<'a> = (Fd, libc::statx);

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let files = per_task_files(scratch, "statx-empty", nr_task)?;
        let c_files = files.iter().map(|f| c_path(f)).collect::<io::Result<_>>()?;
        Ok(StatxEmpty { files, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<(Fd, libc::statx), Failure> {
        Ok((
            sys::open_owned(&self.c_files[task], libc::O_RDWR)?,
            sys::zeroed_statx(),
        ))
    }

    #[inline(always)]
    fn iteration((fd, buf): &mut (Fd, libc::statx)) -> Result<(), Failure> {
        sys::statx_empty(fd.raw(), buf)
    }

    fn cleanup(&self) -> io::Result<()> {
        remove_files(&self.files)
    }
}
