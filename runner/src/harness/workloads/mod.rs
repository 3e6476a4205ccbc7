//! The workloads, one file each, and the table the harness looks them up
//! in. A workload is what will-it-scale calls a testcase: a set-up that
//! makes its files, a per-task set-up, the loop body, and a clean-up. Adding
//! one is adding a file here and a line in [`TABLE`] (and its name and
//! description in `patchperf_common::workload`). The trait they implement
//! lives apart (`harness::workload`), since the driver the table points
//! at is written against it.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::collector::Collector;
use super::driver::{self, Observer, Run};
use super::sys::{self, Failure, Fd};
use super::workload::Workload;
use crate::Error;
use patchperf_common::run::RunResult;

mod dup1;
mod eventfd1;
mod getppid1;
mod lock;
mod lseek;
mod open2;
mod open_close;
mod open_enoent;
mod pipe1;
mod poll;
mod pread1;
mod pwrite1;
mod read;
mod stat_fd;
mod unlink;
mod write1;

/// The harness instantiated for one workload.
pub type RunFn =
    fn(&Run<'_>, &mut [Box<dyn Collector>], &mut Observer<'_>) -> Result<RunResult, Error>;

/// A row of the workload table: the name and the harness instantiated for
/// that workload, so the loop is compiled for each workload on its own.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Workload name.
    pub name: &'static str,
    /// Runs the workload.
    pub run: RunFn,
}

const fn entry<W: Workload>() -> Entry {
    Entry {
        name: W::NAME,
        run: driver::run::<W>,
    }
}

/// Every workload this runner implements.
pub const TABLE: &[Entry] = &[
    entry::<open_close::OpenClose<open_close::Open1>>(),
    entry::<open2::Open2>(),
    entry::<open_close::OpenClose<open_close::Open3>>(),
    entry::<open_enoent::OpenEnoent>(),
    entry::<open_close::OpenClose<open_close::OpenCreat>>(),
    entry::<dup1::Dup1>(),
    entry::<stat_fd::StatFd<stat_fd::Fstat>>(),
    entry::<stat_fd::StatFd<stat_fd::FstatatEmpty>>(),
    entry::<stat_fd::StatFd<stat_fd::StatxEmpty>>(),
    entry::<poll::Poll<poll::Poll1>>(),
    entry::<poll::Poll<poll::Poll2>>(),
    entry::<pipe1::Pipe1>(),
    entry::<read::Read<read::Read1>>(),
    entry::<read::Read<read::Read2>>(),
    entry::<write1::Write1>(),
    entry::<pread1::Pread1>(),
    entry::<pwrite1::Pwrite1>(),
    entry::<lseek::Lseek<lseek::Lseek1>>(),
    entry::<lseek::Lseek<lseek::Lseek2>>(),
    entry::<unlink::Unlink<unlink::Unlink1>>(),
    entry::<unlink::Unlink<unlink::Unlink2>>(),
    entry::<lock::Lock<lock::Lock1>>(),
    entry::<lock::Lock<lock::Lock2>>(),
    entry::<eventfd1::Eventfd1>(),
    entry::<getppid1::Getppid1>(),
];

/// Looks a workload up by name.
pub fn find(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.name == name)
}

/// Whose file a task works on, for the testcases will-it-scale has in
/// two forms: its own (the "Separate file" case, `<name>1`) or one file
/// every task opens for itself (the "Same file" case, `<name>2`).
pub trait FileCase: Sync {
    /// The workload's name.
    const NAME: &'static str;
    /// One file for every task.
    const SHARED: bool;
}

/// Issues `call` again while it is interrupted by a signal, as
/// will-it-scale's pipe and eventfd loops do. Nothing signals a running
/// task, so the retry is out of the loop's way: a loop around every call
/// cost pipe1 2% against the C loop.
#[inline(always)]
pub(crate) fn again<T>(mut call: impl FnMut() -> Result<T, Failure>) -> Result<T, Failure> {
    match call() {
        Err(f) if sys::interrupted(&f) => again_after_a_signal(call),
        done => done,
    }
}

#[cold]
#[inline(never)]
fn again_after_a_signal<T>(mut call: impl FnMut() -> Result<T, Failure>) -> Result<T, Failure> {
    loop {
        match call() {
            Err(f) if sys::interrupted(&f) => continue,
            done => return done,
        }
    }
}

/// A path as a C string for the raw system calls.
pub(crate) fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// The files of a workload's tasks, `<dir>/<prefix>.<task>`, as
/// will-it-scale's per-task `mkstemp` makes them (or the one file every
/// task opens, as its `testcase_prepare` makes it for the "same file"
/// cases), with the C paths the system calls take.
#[derive(Debug)]
pub(crate) struct TaskFiles {
    paths: Vec<PathBuf>,
    c_paths: Vec<CString>,
    shared: bool,
}

impl TaskFiles {
    /// One empty file for each of `nr_task` tasks under `dir`.
    pub(crate) fn create(dir: &Path, prefix: &str, nr_task: u32) -> io::Result<Self> {
        Self::filled(dir, prefix, nr_task, 0)
    }

    /// One file of `bytes` zero bytes for each of `nr_task` tasks.
    pub(crate) fn filled(dir: &Path, prefix: &str, nr_task: u32, bytes: usize) -> io::Result<Self> {
        let mut files = TaskFiles {
            paths: Vec::new(),
            c_paths: Vec::new(),
            shared: false,
        };
        for i in 0..nr_task {
            files.add(&dir.join(format!("{prefix}.{i}")), bytes)?;
        }
        Ok(files)
    }

    /// One file of `bytes` zero bytes that every task opens.
    pub(crate) fn shared(dir: &Path, prefix: &str, bytes: usize) -> io::Result<Self> {
        let mut files = TaskFiles {
            paths: Vec::new(),
            c_paths: Vec::new(),
            shared: true,
        };
        files.add(&dir.join(format!("{prefix}.shared")), bytes)?;
        Ok(files)
    }

    /// The files of case `C`: one shared, or one a task, of `bytes` each.
    pub(crate) fn for_case<C: FileCase>(
        dir: &Path,
        nr_task: u32,
        bytes: usize,
    ) -> io::Result<Self> {
        if C::SHARED {
            Self::shared(dir, C::NAME, bytes)
        } else {
            Self::filled(dir, C::NAME, nr_task, bytes)
        }
    }

    fn add(&mut self, path: &Path, bytes: usize) -> io::Result<()> {
        self.c_paths.push(c_path(path)?);
        create_file(path)?;
        self.paths.push(path.to_path_buf());
        if bytes > 0 {
            std::fs::write(path, vec![0u8; bytes]).map_err(|e| {
                io::Error::new(e.kind(), format!("filling {}: {e}", path.display()))
            })?;
        }
        Ok(())
    }

    /// Task `task`'s file.
    pub(crate) fn path(&self, task: usize) -> &CStr {
        &self.c_paths[if self.shared { 0 } else { task }]
    }

    /// Task `task`'s file opened `O_RDWR`, closed when dropped: a file
    /// description of the task's own even where the file is shared, as
    /// each will-it-scale task opens it for itself.
    pub(crate) fn open(&self, task: usize) -> Result<Fd, Failure> {
        sys::open_owned(self.path(task), libc::O_RDWR)
    }

    /// Removes the files.
    pub(crate) fn remove(&self) -> io::Result<()> {
        remove_files(&self.paths)
    }
}

/// Creates an empty file (mode 0600), failing if it exists.
pub(crate) fn create_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))
}

/// Removes files made by a set-up.
pub(crate) fn remove_files<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> io::Result<()> {
    for path in paths {
        std::fs::remove_file(path)
            .map_err(|e| io::Error::new(e.kind(), format!("removing {}: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchperf_common::workload::WORKLOADS;

    #[test]
    fn the_table_implements_exactly_the_catalogue() {
        let implemented: Vec<_> = TABLE.iter().map(|e| e.name).collect();
        let catalogue: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        assert_eq!(implemented, catalogue);
    }
}
