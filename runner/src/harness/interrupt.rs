//! Ctrl-C and SIGTERM during a run. Once [`install`]ed, the signals no
//! longer kill the runner: they are noted, the parent's one-second sleep
//! wakes up at once (self-pipe), and the harness stops the tasks, removes
//! its scratch files and returns [`crate::Error::Interrupted`].
//!
//! It works together with [`crate::proc`]'s Ctrl-C flag: a run also stops
//! when that flag is set (by `proc`'s own handler), and a signal caught here
//! sets it, so external programs (perf) run through `proc` stop too. This
//! module uses signal-hook rather than a handler thread because the private
//! tmpfs needs a single-threaded process to `unshare` its mount namespace.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The signals that interrupt a run.
const SIGNALS: [i32; 2] = [libc::SIGINT, libc::SIGTERM];

/// The last interrupting signal received, 0 for none.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);
/// Read end of the self-pipe the handlers write to.
static WAKE: OnceLock<File> = OnceLock::new();

/// Catches SIGINT and SIGTERM for the rest of the process's life. Safe to
/// call more than once.
pub fn install() -> io::Result<()> {
    if WAKE.get().is_some() {
        return Ok(());
    }
    let (read, write) = super::pipe::pipe()?;
    set_nonblocking(&read)?;
    for signal in SIGNALS {
        signal_hook::flag::register_usize(signal, &RECEIVED, signal as usize)?;
        signal_hook::low_level::pipe::register(signal, write.try_clone()?)?;
    }
    let _ = WAKE.set(read);
    Ok(())
}

/// The interrupting signal, if one arrived (SIGINT when it was
/// [`crate::proc`]'s handler that saw it).
pub fn pending() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 if crate::proc::interrupted() => Some(libc::SIGINT),
        0 => None,
        signal => {
            crate::proc::interrupt();
            i32::try_from(signal).ok()
        }
    }
}

/// Sleeps until `deadline` (an absolute time, so that repeated sleeps do
/// not drift), or until an interrupting signal arrives: `Err(signal)`.
pub fn sleep_until(deadline: Instant) -> Result<(), i32> {
    let mut fds: Vec<libc::pollfd> = WAKE
        .get()
        .map(|w| libc::pollfd {
            fd: w.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .into_iter()
        .collect();
    loop {
        if let Some(signal) = pending() {
            return Err(signal);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(());
        }
        let left = deadline - now;
        let timeout = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds (possibly
        // empty) and `timeout` a valid timespec; a null sigmask keeps ours.
        let ready = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &timeout,
                std::ptr::null(),
            )
        };
        if ready > 0 && pending().is_none() {
            // A wake-up without a signal noted here (a task caught one in the
            // instant between fork and resetting its handlers): drain it, or
            // every later poll would return at once.
            drain();
        }
    }
}

fn set_nonblocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own; no memory is passed.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn drain() {
    if let Some(mut wake) = WAKE.get() {
        let mut buf = [0u8; 64];
        while matches!(wake.read(&mut buf), Ok(n) if n > 0) {}
    }
}

/// In a freshly forked task: let SIGINT and SIGTERM kill it again, as
/// they would any process, instead of poking the parent's self-pipe.
/// Async-signal-safe.
pub fn restore_defaults_in_child() {
    for signal in SIGNALS {
        // SAFETY: resetting a disposition to SIG_DFL is async-signal-safe
        // and affects only this (child) process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}
