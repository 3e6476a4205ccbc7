//! open2: as open1, but each task's file is in a directory of its own, so
//! the tasks do not share the parent directory's dentry during lookup.

use std::ffi::{CStr, CString};
use std::io;
use std::path::{Path, PathBuf};

use super::{Workload, c_path, create_file};
use crate::harness::sys::{self, Failure};

/// The open2 workload.
#[derive(Debug)]
pub struct Open2 {
    dirs: Vec<PathBuf>,
    c_files: Vec<CString>,
}

impl Workload for Open2 {
    const NAME: &'static str = "open2";
    type Task<'a> = &'a CStr;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let mut dirs = Vec::new();
        let mut c_files = Vec::new();
        for i in 0..nr_task {
            let dir = scratch.join(format!("open2.{i}"));
            std::fs::create_dir(&dir)?;
            let file = dir.join("file");
            dirs.push(dir);
            create_file(&file)?;
            c_files.push(c_path(&file)?);
        }
        Ok(Open2 { dirs, c_files })
    }

    fn task_setup(&self, task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_files[task])
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, libc::O_RDWR, 0)?;
        sys::close(fd)
    }

    fn cleanup(&self) -> io::Result<()> {
        for dir in &self.dirs {
            std::fs::remove_file(dir.join("file"))?;
            std::fs::remove_dir(dir)?;
        }
        Ok(())
    }
}
