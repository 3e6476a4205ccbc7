//! open-enoent: open (`O_RDONLY`) of a path that does not exist; every
//! call must fail with ENOENT. Measures the failed-lookup path (seed 000).

use std::ffi::{CStr, CString};
use std::io;
use std::path::Path;

use super::{Workload, c_path};
use crate::harness::sys::{self, Failure};

/// The open-enoent workload.
#[derive(Debug)]
pub struct OpenEnoent {
    c_missing: CString,
}

impl Workload for OpenEnoent {
    const NAME: &'static str = "open-enoent";
    type Task<'a> = &'a CStr;

    fn setup(scratch: &Path, _nr_task: u32) -> io::Result<Self> {
        let missing = scratch.join("nonexistent");
        if missing.symlink_metadata().is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", missing.display()),
            ));
        }
        Ok(OpenEnoent {
            c_missing: c_path(&missing)?,
        })
    }

    fn task_setup(&self, _task: usize) -> Result<&CStr, Failure> {
        Ok(&self.c_missing)
    }

    #[inline(always)]
    fn iteration(path: &mut &CStr) -> Result<(), Failure> {
        match sys::openat(path, libc::O_RDONLY, 0) {
            Err(Failure {
                errno: libc::ENOENT,
                ..
            }) => Ok(()),
            Err(other) => Err(other),
            Ok(fd) => {
                let _ = sys::close(fd);
                Err(Failure {
                    syscall: libc::SYS_openat,
                    errno: 0,
                })
            }
        }
    }

    fn cleanup(&self) -> io::Result<()> {
        Ok(())
    }
}
