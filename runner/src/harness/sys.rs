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
/// `errno == 0` means the call succeeded where the workload needs it to
/// fail; a negative `errno` that a read or write moved fewer bytes than
/// the loop needs ([`Failure::short`]). Two plain integers, so a forked
/// task can hand one to the parent through the shared mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The `SYS_*` number of the call.
    pub syscall: i64,
    /// The error it returned, 0 for an unexpected success, or
    /// `-(bytes + 1)` for a short transfer.
    pub errno: i32,
}

impl Failure {
    /// Call `syscall` moved only `bytes` bytes where the loop needs all of
    /// its buffer (will-it-scale asserts the whole count).
    pub fn short(syscall: i64, bytes: usize) -> Failure {
        Failure {
            syscall,
            errno: -1 - i32::try_from(bytes).unwrap_or(i32::MAX - 1),
        }
    }

    /// Fails with `syscall`'s short count unless `moved == wanted`.
    #[inline(always)]
    pub fn unless_whole(syscall: i64, moved: usize, wanted: usize) -> Result<(), Failure> {
        if moved == wanted {
            Ok(())
        } else {
            Err(Failure::short(syscall, moved))
        }
    }
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
        } else if self.errno < 0 {
            let bytes = -(i64::from(self.errno) + 1);
            write!(f, "{name} moved {bytes} bytes, not the whole buffer")
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
        libc::SYS_read => "read",
        libc::SYS_write => "write",
        libc::SYS_pread64 => "pread64",
        libc::SYS_pwrite64 => "pwrite64",
        libc::SYS_lseek => "lseek",
        libc::SYS_poll => "poll",
        libc::SYS_unlink => "unlink",
        libc::SYS_fcntl => "fcntl",
        libc::SYS_eventfd2 => "eventfd2",
        libc::SYS_pipe2 => "pipe2",
        libc::SYS_getppid => "getppid",
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

/// `read(fd, buf, buf.len())`: the bytes read (0 at end of file).
#[inline(always)]
pub fn read(fd: RawFd, buf: &mut [u8]) -> Result<usize, Failure> {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_read,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            0,
            0,
        )
    }
}

/// `write(fd, buf, buf.len())`: the bytes written.
#[inline(always)]
pub fn write(fd: RawFd, buf: &[u8]) -> Result<usize, Failure> {
    // SAFETY: `buf` is readable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_write,
            fd as usize,
            buf.as_ptr() as usize,
            buf.len(),
            0,
            0,
        )
    }
}

/// `pread64(fd, buf, buf.len(), offset)`: the bytes read.
#[inline(always)]
pub fn pread(fd: RawFd, buf: &mut [u8], offset: u64) -> Result<usize, Failure> {
    // SAFETY: `buf` is writable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_pread64,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
            offset as usize,
            0,
        )
    }
}

/// `pwrite64(fd, buf, buf.len(), offset)`: the bytes written.
#[inline(always)]
pub fn pwrite(fd: RawFd, buf: &[u8], offset: u64) -> Result<usize, Failure> {
    // SAFETY: `buf` is readable for `buf.len()` bytes.
    unsafe {
        raw(
            libc::SYS_pwrite64,
            fd as usize,
            buf.as_ptr() as usize,
            buf.len(),
            offset as usize,
            0,
        )
    }
}

/// `lseek(fd, offset, SEEK_SET)`.
#[inline(always)]
pub fn seek_to(fd: RawFd, offset: u64) -> Result<(), Failure> {
    // SAFETY: lseek takes plain integers and touches none of our memory.
    unsafe {
        raw(
            libc::SYS_lseek,
            fd as usize,
            offset as usize,
            libc::SEEK_SET as usize,
            0,
            0,
        )
    }
    .map(drop)
}

/// `poll(fds, fds.len(), 0)`: how many entries have events.
#[inline(always)]
pub fn poll_now(fds: &mut [libc::pollfd]) -> Result<usize, Failure> {
    // SAFETY: `fds` is a writable array of `fds.len()` pollfd entries.
    unsafe {
        raw(
            libc::SYS_poll,
            fds.as_mut_ptr() as usize,
            fds.len(),
            0,
            0,
            0,
        )
    }
}

/// `unlink(path)`.
#[inline(always)]
pub fn unlink(path: &CStr) -> Result<(), Failure> {
    // SAFETY: `path` is a valid NUL-terminated string.
    unsafe { raw(libc::SYS_unlink, path.as_ptr() as usize, 0, 0, 0, 0) }.map(drop)
}

/// `fcntl(fd, F_SETLKW, lock)`: takes or releases a POSIX record lock,
/// waiting for a conflicting one to go.
#[inline(always)]
pub fn set_lock_wait(fd: RawFd, lock: &libc::flock) -> Result<(), Failure> {
    // SAFETY: `lock` is a valid `struct flock` the call only reads.
    unsafe {
        raw(
            libc::SYS_fcntl,
            fd as usize,
            libc::F_SETLKW as usize,
            lock as *const libc::flock as usize,
            0,
            0,
        )
    }
    .map(drop)
}

/// A POSIX record lock of type `kind` (`F_WRLCK`, `F_UNLCK`) over bytes
/// `start..start + len`.
pub fn record_lock(kind: i32, start: i64, len: i64) -> libc::flock {
    // SAFETY: `struct flock` is plain integers; all-zero is a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = start;
    lock.l_len = len;
    lock
}

/// `eventfd2(0, 0)`: a new eventfd with a zero counter, blocking.
pub fn eventfd() -> Result<Fd, Failure> {
    // SAFETY: eventfd2 takes plain integers.
    let fd = unsafe { raw(libc::SYS_eventfd2, 0, 0, 0, 0, 0) }?;
    Ok(Fd(fd as RawFd))
}

/// `pipe2(fds, 0)`: a new pipe, its read end first.
pub fn pipe() -> Result<(Fd, Fd), Failure> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 fills.
    unsafe { raw(libc::SYS_pipe2, fds.as_mut_ptr() as usize, 0, 0, 0, 0) }?;
    Ok((Fd(fds[0]), Fd(fds[1])))
}

/// `getppid()`.
#[inline(always)]
pub fn getppid() -> Result<(), Failure> {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { raw(libc::SYS_getppid, 0, 0, 0, 0, 0) }.map(drop)
}

/// Whether `failure` is an interrupted call, which will-it-scale's loops
/// issue again.
#[inline(always)]
pub fn interrupted(failure: &Failure) -> bool {
    failure.errno == libc::EINTR
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
        assert_eq!(
            Failure::short(libc::SYS_pread64, 100).to_string(),
            "pread64 moved 100 bytes, not the whole buffer"
        );
        assert_eq!(
            Failure::unless_whole(libc::SYS_write, 0, 8),
            Err(Failure::short(libc::SYS_write, 0))
        );
        assert_eq!(Failure::unless_whole(libc::SYS_write, 8, 8), Ok(()));
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
