//! unlink1 and unlink2: each task creates a file with `open(O_CREAT)`,
//! closes it and unlinks it again (will-it-scale's "Separate file
//! open/close/unlink", all files in one directory, and the same "in
//! different directories"): dentry and inode made and freed every loop,
//! `fs/namei.c`'s create and unlink paths and the file system's.

use std::ffi::{CStr, CString};
use std::io;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use super::{Workload, c_path};
use crate::harness::sys::{self, Failure};

/// Where the tasks' files live.
pub trait UnlinkCase: Sync {
    /// The workload's name.
    const NAME: &'static str;
    /// Each task's file in a directory of its own, instead of all in one.
    const OWN_DIRECTORY: bool;
}

/// unlink1: all files in one directory.
#[derive(Debug)]
pub struct Unlink1;

impl UnlinkCase for Unlink1 {
    const NAME: &'static str = "unlink1";
    const OWN_DIRECTORY: bool = false;
}

/// unlink2: each task's file in its own directory.
#[derive(Debug)]
pub struct Unlink2;

impl UnlinkCase for Unlink2 {
    const NAME: &'static str = "unlink2";
    const OWN_DIRECTORY: bool = true;
}

/// The workload creating and unlinking as `C` says.
#[derive(Debug)]
pub struct Unlink<C> {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
    c_files: Vec<CString>,
    case: PhantomData<C>,
}

impl<C: UnlinkCase> Workload for Unlink<C> {
    const NAME: &'static str = C::NAME;
    type Task<'a>
        = &'a CStr
    where
        C: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        let mut made = Unlink {
            dirs: Vec::new(),
            files: Vec::new(),
            c_files: Vec::new(),
            case: PhantomData,
        };
        for i in 0..nr_task {
            let file = if C::OWN_DIRECTORY {
                let dir = scratch.join(format!("{}.{i}", C::NAME));
                std::fs::create_dir(&dir).map_err(|e| {
                    io::Error::new(e.kind(), format!("creating {}: {e}", dir.display()))
                })?;
                made.dirs.push(dir.clone());
                dir.join("file")
            } else {
                scratch.join(format!("{}.{i}", C::NAME))
            };
            made.c_files.push(c_path(&file)?);
            made.files.push(file);
        }
        Ok(made)
    }

    fn task_setup(&self, task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_files[task])
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        let fd = sys::openat(path, libc::O_RDWR | libc::O_CREAT, 0o600)?;
        sys::close(fd)?;
        sys::unlink(path)
    }

    fn cleanup(&self) -> io::Result<()> {
        // A task stopped between its open and its unlink leaves its file.
        for file in &self.files {
            match std::fs::remove_file(file) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("removing {}: {e}", file.display()),
                    ));
                }
                _ => {}
            }
        }
        for dir in &self.dirs {
            std::fs::remove_dir(dir).map_err(|e| {
                io::Error::new(e.kind(), format!("removing {}: {e}", dir.display()))
            })?;
        }
        Ok(())
    }
}
