//! The raw system calls the workloads issue, as thin safe wrappers.
//!
//! Each wrapper makes exactly one system call through libc's `syscall()`
//! with the number spelled out, so the libc in use cannot swap it for
//! another one (glibc turns `fstat()` into `newfstatat(fd, "",
//! AT_EMPTY_PATH)`, for example). They neither allocate nor take locks, so
//! they may run in a freshly forked child of a multi-threaded parent.

use std::ffi::CStr;
use std::os::fd::RawFd;

/// A failed (or wrongly successful) system call: which one and its errno.
/// `errno == 0` means the call succeeded where the workload needs it to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The `SYS_*` number of the call.
    pub syscall: i64,
    /// The error it returned, or 0 for an unexpected success.
    pub errno: i32,
}

/// Issues system call `nr` through libc's generic `syscall()` with up to
/// five arguments (unused ones are ignored by the kernel) and returns the
/// new fd/0 or the failure.
///
/// Deliberately not an inline `syscall` instruction: real programs, and
/// will-it-scale's tests, enter the kernel from a libc function and return
/// into it, and part of a kernel's cost depends on exactly that (on the
/// machine of the README's ratio table the same loops ran about 1.4× as
/// fast with the instruction inline). Going through libc keeps that cost
/// in the numbers, as will-it-scale and real programs see it.
///
/// # Safety
/// The arguments must be valid for `nr`: every pointer among them must
/// point to memory of the size and mutability the call expects.
#[inline(always)]
unsafe fn raw(
    nr: i64,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
) -> Result<usize, Failure> {
    // SAFETY: the caller vouches for the arguments.
    let ret = unsafe { libc::syscall(nr as libc::c_long, a1, a2, a3, a4, a5) };
    if ret < 0 {
        Err(Failure {
            syscall: nr,
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        })
    } else {
        Ok(ret as usize)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = syscall_name(self.syscall);
        if self.errno == 0 {
            write!(f, "{name} succeeded where it must fail")
        } else {
            let err = std::io::Error::from_raw_os_error(self.errno);
            write!(f, "{name} failed: {err}")
        }
    }
}

/// The kernel's name of a system call this module issues.
pub fn syscall_name(nr: i64) -> &'static str {
    match nr {
        libc::SYS_openat => "openat",
        libc::SYS_close => "close",
        libc::SYS_dup => "dup",
        libc::SYS_fstat => "fstat",
        libc::SYS_newfstatat => "newfstatat",
        libc::SYS_statx => "statx",
        _ => "syscall",
    }
}

/// An owned file descriptor, closed with a raw `close` on drop.
#[derive(Debug)]
pub struct Fd(RawFd);

impl Fd {
    /// The descriptor number.
    #[inline(always)]
    pub fn raw(&self) -> RawFd {
        self.0
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = close(self.0);
    }
}

/// `openat(AT_FDCWD, path, flags, mode)`, returning the new descriptor
/// without taking ownership of it (the loop closes it itself).
#[inline(always)]
pub fn openat(path: &CStr, flags: i32, mode: u32) -> Result<RawFd, Failure> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the
    // call; openat reads nothing else from our memory.
    let fd = unsafe {
        raw(
            libc::SYS_openat,
            libc::AT_FDCWD as usize,
            path.as_ptr() as usize,
            flags as usize,
            mode as usize,
            0,
        )
    }?;
    Ok(fd as RawFd)
}

/// [`openat`] into an owned [`Fd`].
pub fn open_owned(path: &CStr, flags: i32) -> Result<Fd, Failure> {
    openat(path, flags | libc::O_CLOEXEC, 0).map(Fd)
}

/// `close(fd)`.
#[inline(always)]
pub fn close(fd: RawFd) -> Result<(), Failure> {
    // SAFETY: close takes a plain integer; closing a descriptor we do not own
    // would be a logic error but not memory-unsafe.
    unsafe { raw(libc::SYS_close, fd as usize, 0, 0, 0, 0) }.map(drop)
}

/// `dup(fd)`.
#[inline(always)]
pub fn dup(fd: RawFd) -> Result<RawFd, Failure> {
    // SAFETY: dup takes a plain integer and touches none of our memory.
    let copy = unsafe { raw(libc::SYS_dup, fd as usize, 0, 0, 0, 0) }?;
    Ok(copy as RawFd)
}

/// The native `fstat(fd, buf)` system call.
#[inline(always)]
pub fn fstat(fd: RawFd, buf: &mut libc::stat) -> Result<(), Failure> {
    // SAFETY: `buf` is a valid, writable `struct stat` of the kernel's layout
    // for this architecture (libc's `stat` is the one fstat fills).
    unsafe {
        raw(
            libc::SYS_fstat,
            fd as usize,
            buf as *mut libc::stat as usize,
            0,
            0,
            0,
        )
    }
    .map(drop)
}

/// `newfstatat(fd, "", buf, AT_EMPTY_PATH)`: what glibc issues for `fstat()`.
#[inline(always)]
pub fn newfstatat_empty(fd: RawFd, buf: &mut libc::stat) -> Result<(), Failure> {
    // SAFETY: the path is a static empty C string, `buf` a valid writable
    // `struct stat`.
    unsafe {
        raw(
            libc::SYS_newfstatat,
            fd as usize,
            c"".as_ptr() as usize,
            buf as *mut libc::stat as usize,
            libc::AT_EMPTY_PATH as usize,
            0,
        )
    }
    .map(drop)
}

/// `statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, buf)`.
#[inline(always)]
pub fn statx_empty(fd: RawFd, buf: &mut libc::statx) -> Result<(), Failure> {
    // SAFETY: the path is a static empty C string, `buf` a valid writable
    // `struct statx`.
    unsafe {
        raw(
            libc::SYS_statx,
            fd as usize,
            c"".as_ptr() as usize,
            libc::AT_EMPTY_PATH as usize,
            libc::STATX_BASIC_STATS as usize,
            buf as *mut libc::statx as usize,
        )
    }
    .map(drop)
}

/// A zeroed `struct stat` to pass to the stat calls.
pub fn zeroed_stat() -> libc::stat {
    // SAFETY: `struct stat` is plain integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// A zeroed `struct statx` to pass to [`statx_empty`].
pub fn zeroed_statx() -> libc::statx {
    // SAFETY: `struct statx` is plain integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_the_syscall_and_the_error() {
        let f = Failure {
            syscall: libc::SYS_openat,
            errno: libc::ENOENT,
        };
        assert!(
            f.to_string()
                .starts_with("openat failed: No such file or directory")
        );
        let f = Failure {
            syscall: libc::SYS_openat,
            errno: 0,
        };
        assert_eq!(f.to_string(), "openat succeeded where it must fail");
    }

    #[test]
    fn the_three_stat_calls_see_the_same_inode() {
        let fd = open_owned(c"/proc/self/exe", libc::O_RDONLY).unwrap();
        let (mut a, mut b, mut c) = (zeroed_stat(), zeroed_stat(), zeroed_statx());
        fstat(fd.raw(), &mut a).unwrap();
        newfstatat_empty(fd.raw(), &mut b).unwrap();
        statx_empty(fd.raw(), &mut c).unwrap();
        assert_ne!(a.st_ino, 0);
        assert_eq!(a.st_ino, b.st_ino);
        assert_eq!(a.st_ino, c.stx_ino);
    }
}
