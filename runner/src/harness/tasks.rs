//! Starting the tasks (forked processes or threads), the start gate they
//! wait on, the loop they run, and stopping them again.
//!
//! Everything a forked child runs is async-signal-safe (raw system calls
//! on memory prepared before the fork), because the parent may have other
//! threads (perf helpers, the test harness) whose locks the child inherits
//! held.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::interrupt;
use super::pipe::pipe;
use super::shared::Slot;
use super::sys::Failure;
use super::workload::Workload;

/// All tasks block on this until the parent opens it, so they start
/// together (will-it-scale does the same with a pipe).
#[derive(Debug)]
pub struct Gate {
    wait_end: File,
    open_end: File,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> io::Result<Self> {
        let (wait_end, open_end) = pipe()?;
        Ok(Gate { wait_end, open_end })
    }

    /// The descriptor tasks wait on.
    pub fn wait_fd(&self) -> RawFd {
        self.wait_end.as_raw_fd()
    }

    /// Releases every waiting task, now and later.
    pub fn open(&self) -> io::Result<()> {
        (&self.open_end).write_all(&[1])
    }
}

/// Blocks until the gate opens. Async-signal-safe.
fn wait_for_gate(fd: RawFd) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one valid pollfd on our stack.
        let ret = unsafe { libc::poll(&mut pfd, 1, -1) };
        if ret > 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Pins the calling thread (or process) to `cpu`. Async-signal-safe.
fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET bounds-checks `cpu` against the set's size and writes
    // only into `set`; `set` is a valid cpu_set_t of the size passed and
    // pid 0 is the calling thread.
    unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The CPUs this process may run on, in order: task i goes on entry
/// `i % len`.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed.
    let ret =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET only reads `set`, within CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// What one task needs, all prepared before it starts.
#[derive(Debug, Clone, Copy)]
pub struct TaskPlan<'a> {
    /// Task number, 0-based.
    pub index: usize,
    /// Its counter line.
    pub slot: &'a Slot,
    /// The start gate.
    pub gate: RawFd,
    /// The CPU to pin it to.
    pub cpu: Option<usize>,
    /// Threads mode: leave the loop when set.
    pub stop: &'a AtomicBool,
}

/// A task's life: pin, set up, report ready, wait for the gate, loop.
/// `STOPPABLE` (threads mode) checks the stop flag each iteration;
/// processes are killed instead, so their loop is exactly will-it-scale's.
#[inline(always)]
fn task_body<W: Workload, const STOPPABLE: bool>(workload: &W, plan: TaskPlan<'_>) {
    if let Some(cpu) = plan.cpu {
        pin_to(cpu);
    }
    let mut task = match workload.task_setup(plan.index) {
        Ok(task) => task,
        Err(failure) => {
            plan.slot.set_failed(false, failure);
            return;
        }
    };
    plan.slot.set_ready();
    wait_for_gate(plan.gate);
    if STOPPABLE && plan.stop.load(Ordering::Relaxed) {
        return;
    }
    if let Some(failure) = task_loop::<W, STOPPABLE>(&mut task, plan.slot, plan.stop) {
        plan.slot.set_failed(true, failure);
    }
}

/// The measured loop: one iteration, one counter store. Not inlined, so it
/// shows up in profiles under its own name.
#[inline(never)]
fn task_loop<W: Workload, const STOPPABLE: bool>(
    task: &mut W::Task<'_>,
    slot: &Slot,
    stop: &AtomicBool,
) -> Option<Failure> {
    let mut ops: u64 = 0;
    loop {
        if STOPPABLE && stop.load(Ordering::Relaxed) {
            return None;
        }
        if let Err(failure) = W::iteration(task) {
            return Some(failure);
        }
        ops += W::OPS_PER_ITERATION;
        slot.set_ops(ops);
    }
}

/// Forked tasks; killed and reaped on drop.
#[derive(Debug)]
pub struct Processes {
    pids: Vec<libc::pid_t>,
    reaped: Vec<bool>,
}

impl Processes {
    /// Forks one child per plan. On failure the children forked so far
    /// are killed (by the drop of the partial set).
    pub fn spawn<W: Workload>(workload: &W, plans: &[TaskPlan<'_>]) -> io::Result<Self> {
        let mut procs = Processes {
            pids: Vec::with_capacity(plans.len()),
            reaped: Vec::with_capacity(plans.len()),
        };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        for plan in plans {
            // SAFETY: the child runs only `child_main`, which is
            // async-signal-safe and never returns.
            let pid = unsafe { libc::fork() };
            match pid {
                -1 => return Err(io::Error::last_os_error()),
                0 => child_main(workload, *plan, parent),
                pid => {
                    procs.pids.push(pid);
                    procs.reaped.push(false);
                }
            }
        }
        Ok(procs)
    }

    /// The first task that is gone, with how it ended.
    pub fn first_dead(&mut self) -> Option<(usize, String)> {
        for (i, &pid) in self.pids.iter().enumerate() {
            if self.reaped[i] {
                continue;
            }
            let mut status = 0;
            // SAFETY: `status` is a writable int; pid is our child.
            let ret = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if ret == pid {
                self.reaped[i] = true;
                let how = if libc::WIFSIGNALED(status) {
                    format!("killed by signal {}", libc::WTERMSIG(status))
                } else {
                    format!("exited with status {}", libc::WEXITSTATUS(status))
                };
                return Some((i, how));
            }
        }
        None
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (&pid, &reaped) in self.pids.iter().zip(&self.reaped) {
            if !reaped {
                // SAFETY: pid is our unreaped child, so it cannot have been
                // recycled for another process.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        for (&pid, &reaped) in self.pids.iter().zip(&self.reaped) {
            if !reaped {
                let mut status = 0;
                // SAFETY: `status` is a writable int; pid is our child.
                unsafe {
                    libc::waitpid(pid, &mut status, 0);
                }
            }
        }
    }
}

/// Names the calling process `name` (its first 15 bytes: the kernel's
/// `comm`), so that `ps`, perf and the workload map tell the tasks from
/// the runner that forked them. Async-signal-safe: no allocation.
fn name_process(name: &str) {
    let mut comm = [0u8; 16];
    let len = name.len().min(comm.len() - 1);
    comm[..len].copy_from_slice(&name.as_bytes()[..len]);
    // SAFETY: `comm` is a NUL-terminated buffer of 16 bytes, as
    // PR_SET_NAME reads; it only renames this process.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, comm.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

/// A forked task. Never returns; async-signal-safe throughout.
fn child_main<W: Workload>(workload: &W, plan: TaskPlan<'_>, parent: libc::pid_t) -> ! {
    interrupt::restore_defaults_in_child();
    // SAFETY: prctl/getppid only affect or query this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    name_process(W::NAME);
    task_body::<W, false>(workload, plan);
    // Only reached when set-up or the loop failed; the slot says why.
    // SAFETY: _exit ends this child without running the parent's atexit
    // handlers or destructors.
    unsafe { libc::_exit(1) }
}

/// Raises `RLIMIT_NOFILE` so that `fds` more descriptors fit, as
/// will-it-scale's poll2 does: threads share one file table (thousands of
/// tasks each holding an fd, poll2's 128), and forked tasks inherit the
/// limit. The soft limit goes up to the hard one; past it only where the
/// process may (root in a guest; `fs.nr_open` bounds it). Where it cannot,
/// a task's set-up fails with EMFILE, which the run reports.
pub fn raise_nofile_limit(fds: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    // The descriptors the process holds already (stdio, perf's pipes, …).
    let want = fds.saturating_add(256);
    let mut raised = limit;
    raised.rlim_cur = limit.rlim_cur.max(want.min(limit.rlim_max));
    if want > limit.rlim_max {
        let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(limit.rlim_max);
        let high = libc::rlimit {
            rlim_cur: want.min(ceiling).max(limit.rlim_cur),
            rlim_max: want.min(ceiling).max(limit.rlim_max),
        };
        // SAFETY: setrlimit only reads `high`.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &high) } == 0 {
            return;
        }
    }
    if raised.rlim_cur != limit.rlim_cur {
        // SAFETY: setrlimit only reads `raised`.
        unsafe {
            libc::setrlimit(libc::RLIMIT_NOFILE, &raised);
        }
    }
}

/// Runs `body` with one scoped thread per plan, then stops and joins them:
/// the stop flag is set and the gate opened, so threads that never got
/// past the gate leave too.
pub fn with_threads<W: Workload, R>(
    workload: &W,
    plans: &[TaskPlan<'_>],
    stop: &AtomicBool,
    gate: &Gate,
    body: impl FnOnce() -> R,
) -> io::Result<R> {
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(plans.len());
        let mut spawn_error = None;
        for plan in plans {
            let plan = *plan;
            let spawned = std::thread::Builder::new()
                .name(format!("{}/{}", W::NAME, plan.index))
                .stack_size(256 << 10)
                .spawn_scoped(scope, move || task_body::<W, true>(workload, plan));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        let result = match spawn_error {
            None => Ok(body()),
            Some(e) => Err(e),
        };
        stop.store(true, Ordering::Relaxed);
        let opened = gate.open();
        let mut panicked = false;
        for handle in handles {
            panicked |= handle.join().is_err();
        }
        opened?;
        if panicked {
            return Err(io::Error::other("a task thread panicked"));
        }
        result
    })
}
