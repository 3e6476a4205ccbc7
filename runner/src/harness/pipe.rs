//! The close-on-exec pipe both the start gate (`tasks`) and the signal
//! self-pipe (`interrupt`) are made of.

use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;

/// A pipe (read end, write end), close-on-exec. A pipe rather than a
/// socketpair, so that benchmark kernels need no CONFIG_UNIX.
pub fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 expects.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two descriptors; nothing else owns them.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}
