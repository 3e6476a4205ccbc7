//! poll1 and poll2: each task asks `poll(2)` whether fds of its own file
//! are writable, without waiting (will-it-scale's "poll of 1 fd" and "poll
//! of 128 fds"). Regular files have no `->poll`, so the cost is the
//! syscall's: copying the array in and out and looking each fd up in the
//! file table (`fs/select.c`). Every fd is a file description of its own,
//! opened by the task; poll2's 128 are of one file where will-it-scale
//! makes 128, which `poll` cannot tell apart.

use std::io;
use std::marker::PhantomData;
use std::path::Path;

use super::{TaskFiles, Workload};
use crate::harness::sys::{self, Failure, Fd};

/// The most fds a poll workload polls.
const MAX_FDS: usize = 128;

/// How many fds one poll workload polls.
pub trait PollWidth: Sync {
    /// The workload's name.
    const NAME: &'static str;
    /// Fds in the array, at most [`MAX_FDS`].
    const FDS: usize;
}

/// poll1: one fd.
#[derive(Debug)]
pub struct Poll1;

impl PollWidth for Poll1 {
    const NAME: &'static str = "poll1";
    const FDS: usize = 1;
}

/// poll2: 128 fds.
#[derive(Debug)]
pub struct Poll2;

impl PollWidth for Poll2 {
    const NAME: &'static str = "poll2";
    const FDS: usize = MAX_FDS;
}

/// What a polling task holds: its fds and the array it hands to `poll`.
/// Fixed arrays, so a forked task sets it up without allocating.
#[derive(Debug)]
pub struct Polling {
    fds: [Option<Fd>; MAX_FDS],
    array: [libc::pollfd; MAX_FDS],
    used: usize,
}

/// The workload polling `P::FDS` fds.
#[derive(Debug)]
pub struct Poll<P> {
    files: TaskFiles,
    width: PhantomData<P>,
}

impl<P: PollWidth> Workload for Poll<P> {
    const NAME: &'static str = P::NAME;
    const FDS_PER_TASK: u64 = P::FDS as u64 + 2;
    type Task<'a>
        = Polling
    where
        P: 'a;

    fn setup(scratch: &Path, nr_task: u32) -> io::Result<Self> {
        Ok(Poll {
            files: TaskFiles::create(scratch, P::NAME, nr_task)?,
            width: PhantomData,
        })
    }

    fn task_setup(&self, task: usize) -> Result<Polling, Failure> {
        let mut polling = Polling {
            fds: [const { None }; MAX_FDS],
            array: [libc::pollfd {
                fd: -1,
                events: 0,
                revents: 0,
            }; MAX_FDS],
            used: P::FDS.min(MAX_FDS),
        };
        for slot in &mut polling.fds[..polling.used] {
            *slot = Some(self.files.open(task)?);
        }
        Ok(polling)
    }

    #[inline(always)]
    fn iteration(p: &mut Polling) -> Result<(), Failure> {
        // Filled afresh each time, as will-it-scale's loop does.
        for (entry, fd) in p.array[..p.used].iter_mut().zip(&p.fds) {
            *entry = libc::pollfd {
                fd: fd.as_ref().map_or(-1, Fd::raw),
                events: libc::POLLOUT,
                revents: 0,
            };
        }
        sys::poll_now(&mut p.array[..p.used]).map(drop)
    }

    fn cleanup(&self) -> io::Result<()> {
        self.files.remove()
    }
}
