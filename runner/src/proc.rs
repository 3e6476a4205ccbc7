//! Every external program the runner starts (make, qemu, perf, git, patch)
//! goes through here: it runs in its own process group with a time limit,
//! the whole group is killed on timeout, on Ctrl-C, when a watcher says stop,
//! or when the handle is dropped, and the last lines of its output are kept
//! for error reports. Lines can be streamed to a callback as they arrive
//! (progress bars, panic detection on a console).
//!
//! One file of ~520 lines on purpose: the process group, the time limit, the
//! kill on drop and the output tail are one mechanism whose parts must agree
//! on who owns the child; split, each part would need the others' internals.
//!
//! ```no_run
//! use std::time::Duration;
//! use patchperf_runner::proc::Cmd;
//!
//! let out = Cmd::new("make")
//!     .args(["-j2", "bzImage"])
//!     .timeout(Duration::from_secs(3600))
//!     .run()?;
//! println!("took {:?}; last lines:\n{}", out.elapsed, out.tail);
//! # Ok::<(), patchperf_runner::Error>(())
//! ```

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, mpsc};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

use crate::Error;

/// Lines kept for error reports unless [`Cmd::tail_lines`] says otherwise.
pub const DEFAULT_TAIL_LINES: usize = 60;

/// How often a watcher gets an [`Event::Tick`] when the program is quiet.
const TICK: Duration = Duration::from_millis(200);

/// After the program exits, how long to wait for output still in flight from
/// processes of its group that outlived it before killing them.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Longest line kept; longer lines (a binary blob on a console) are cut.
const MAX_LINE_BYTES: usize = 4096;

/// Set by [`interrupt`] or by SIGINT/SIGTERM once
/// [`install_interrupt_handler`] ran.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Marks the runner as interrupted (Ctrl-C): every running [`Cmd`] kills its
/// process group and returns [`Error::Interrupted`], so cleanup code runs on
/// the way out instead of the process dying with children left behind.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes Ctrl-C and SIGTERM call [`interrupt`], so running programs are
/// killed and the runner unwinds through its cleanup. Commands that start
/// long-lived programs (job, agent) call this once at start.
pub fn install_interrupt_handler() -> Result<(), Error> {
    // signal-hook only sets a flag from the handler: no thread is started
    // (the bench harness needs a single-threaded process to unshare).
    for signal in [libc::SIGINT, libc::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&INTERRUPTED))
            .map_err(|e| Error::io("installing the Ctrl-C handler", e))?;
    }
    Ok(())
}

/// Whether [`interrupt`] was called.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The last lines a program printed (stdout and stderr interleaved as they
/// arrived), oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    lines: VecDeque<String>,
    max: usize,
}

impl Tail {
    /// An empty tail keeping at most `max` lines.
    pub fn new(max: usize) -> Self {
        Tail {
            lines: VecDeque::with_capacity(max.min(1024)),
            max: max.max(1),
        }
    }

    /// Appends a line, dropping the oldest one when full.
    pub fn push(&mut self, line: &str) {
        if self.lines.len() == self.max {
            self.lines.pop_front();
        }
        self.lines.push_back(line.to_string());
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }

    /// The last `n` kept lines joined with newlines.
    pub fn last(&self, n: usize) -> String {
        let skip = self.lines.len().saturating_sub(n);
        let mut out = String::new();
        for line in self.lines.iter().skip(skip) {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Tail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.last(self.lines.len()))
    }
}

/// What a watcher sees while a program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// One line of output, without its line ending.
    Line(&'a str),
    /// Nothing printed for a while; a chance to check other conditions
    /// (a cancelled job, a boot that should have finished by now).
    Tick,
}

/// A watcher's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep running.
    Continue,
    /// Kill the process group now; [`Output::stopped`] will be true.
    Stop,
}

/// How a program ended.
#[derive(Debug)]
pub struct Output {
    /// Its exit status; `None` when a watcher stopped it.
    pub status: Option<ExitStatus>,
    /// A watcher returned [`Flow::Stop`] and the group was killed.
    pub stopped: bool,
    /// The last lines it printed.
    pub tail: Tail,
    /// All of stdout, when [`Cmd::capture_stdout`] asked for it.
    pub stdout: String,
    /// Wall time from start to end.
    pub elapsed: Duration,
}

impl Output {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// A program to run, with its arguments, environment and limits.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    timeout: Option<Duration>,
    tail_lines: usize,
    capture_stdout: bool,
    stdin: Option<PathBuf>,
}

impl Cmd {
    /// A command running `program` (looked up in `PATH` when it has no `/`).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Cmd {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            envs: Vec::new(),
            cwd: None,
            timeout: None,
            tail_lines: DEFAULT_TAIL_LINES,
            capture_stdout: false,
            stdin: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets an environment variable (the rest of the environment is
    /// inherited).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// The value the command sets for environment variable `key`, if any.
    #[cfg(test)]
    pub(crate) fn env_value(&self, key: &str) -> Option<&OsStr> {
        self.envs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_os_str())
    }

    /// Runs the program in `dir`.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Kills the program's process group once it has run this long.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Keeps this many of the last output lines (default
    /// [`DEFAULT_TAIL_LINES`]).
    pub fn tail_lines(mut self, n: usize) -> Self {
        self.tail_lines = n;
        self
    }

    /// Also collects all of stdout into [`Output::stdout`].
    pub fn capture_stdout(mut self) -> Self {
        self.capture_stdout = true;
        self
    }

    /// Feeds this file to the program's stdin (otherwise stdin is
    /// `/dev/null`).
    pub fn stdin_file(mut self, path: impl AsRef<Path>) -> Self {
        self.stdin = Some(path.as_ref().to_path_buf());
        self
    }

    /// The command line as a shell user would type it, for messages.
    pub fn display(&self) -> String {
        let mut s = self.program.to_string_lossy().into_owned();
        for arg in &self.args {
            let arg = arg.to_string_lossy();
            s.push(' ');
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || c == '"') {
                s.push_str(&format!("{arg:?}"));
            } else {
                s.push_str(&arg);
            }
        }
        s
    }

    /// Runs to completion and fails unless the program exits with status 0.
    pub fn run(&self) -> Result<Output, Error> {
        let out = self.output()?;
        self.check(out)
    }

    /// Runs to completion; any exit status is `Ok` (look at
    /// [`Output::status`]). Fails only when the program cannot start, times
    /// out or is interrupted.
    pub fn output(&self) -> Result<Output, Error> {
        self.watch(&mut |_| Flow::Continue)
    }

    /// Runs and returns all of stdout, trimmed; fails unless the exit status
    /// is 0.
    pub fn stdout_string(&self) -> Result<String, Error> {
        let out = self.clone().capture_stdout().run()?;
        Ok(out.stdout.trim().to_string())
    }

    /// Like [`Cmd::output`], calling `watcher` with each output line and
    /// with a [`Event::Tick`] whenever the program has been quiet for a
    /// moment. When the watcher returns [`Flow::Stop`] the whole process
    /// group is killed and `Ok` is returned with [`Output::stopped`] set.
    pub fn watch(&self, watcher: &mut dyn FnMut(Event<'_>) -> Flow) -> Result<Output, Error> {
        let started = Instant::now();
        let mut group = self.spawn()?;
        let (tx, rx) = mpsc::channel::<(bool, String)>();
        let mut readers = 0;
        if let Some(stdout) = group.child.stdout.take() {
            spawn_reader(stdout, true, tx.clone());
            readers += 1;
        }
        if let Some(stderr) = group.child.stderr.take() {
            spawn_reader(stderr, false, tx.clone());
            readers += 1;
        }
        drop(tx);

        let mut tail = Tail::new(self.tail_lines);
        let mut stdout = String::new();
        let mut exited_at: Option<Instant> = None;
        let mut stopped = false;
        loop {
            if interrupted() {
                group.kill();
                return Err(Error::Interrupted);
            }
            if let Some(limit) = self.timeout {
                if started.elapsed() >= limit {
                    group.kill();
                    return Err(Error::ProcessTimedOut {
                        command: self.display(),
                        seconds: limit.as_secs_f64(),
                        tail: tail.to_string(),
                    });
                }
            }
            if exited_at.is_none() && group.exited()? {
                exited_at = Some(Instant::now());
            }
            if let Some(at) = exited_at {
                if readers == 0 || at.elapsed() >= DRAIN_GRACE {
                    break;
                }
            }
            match rx.recv_timeout(TICK) {
                Ok((is_stdout, line)) => {
                    if self.capture_stdout && is_stdout {
                        stdout.push_str(&line);
                        stdout.push('\n');
                    }
                    tail.push(&line);
                    if watcher(Event::Line(&line)) == Flow::Stop {
                        stopped = true;
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if watcher(Event::Tick) == Flow::Stop {
                        stopped = true;
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    readers = 0;
                    if exited_at.is_none() {
                        // Output closed but the program still runs: poll
                        // without a channel to sleep on.
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
        // Whatever of the group is still alive (a watcher said stop, or a
        // child outlived its parent) goes now, before the leader is reaped
        // so its process group id cannot have been reused.
        group.kill();
        let status = group.reap()?;
        Ok(Output {
            status: if stopped { None } else { Some(status) },
            stopped,
            tail,
            stdout,
            elapsed: started.elapsed(),
        })
    }

    /// Turns a non-zero exit (or a stop) into [`Error::ProcessFailed`].
    fn check(&self, out: Output) -> Result<Output, Error> {
        if out.success() {
            return Ok(out);
        }
        Err(Error::ProcessFailed {
            command: self.display(),
            status: match out.status {
                Some(s) => describe_status(s),
                None => "stopped".to_string(),
            },
            tail: out.tail.to_string(),
        })
    }

    fn spawn(&self) -> Result<Group, Error> {
        let mut cmd = std::process::Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        match &self.stdin {
            Some(path) => {
                let file = std::fs::File::open(path)
                    .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
                cmd.stdin(file);
            }
            None => {
                cmd.stdin(Stdio::null());
            }
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        // SAFETY: the closure runs in the forked child before exec and only
        // makes one async-signal-safe syscall (prctl). It asks the kernel to
        // SIGKILL the program if the runner dies without unwinding (SIGKILL,
        // abort), so a QEMU cannot outlive us. The signal fires when the
        // spawning *thread* exits; every caller waits on the program from
        // the thread that started it, so that never comes early.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
            });
        }
        let child = cmd.spawn().map_err(|source| Error::Spawn {
            program: self.program.to_string_lossy().into_owned(),
            source,
        })?;
        Ok(Group {
            pgid: Pid::from_raw(child.id() as i32),
            child,
            reaped: false,
        })
    }
}

/// A running program and its process group; dropping it kills the group.
#[derive(Debug)]
struct Group {
    child: Child,
    pgid: Pid,
    reaped: bool,
}

impl Group {
    /// Whether the leader has exited, without reaping it (a zombie leader
    /// keeps the group id reserved until [`Group::reap`]).
    fn exited(&self) -> Result<bool, Error> {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        match waitid(Id::Pid(self.pgid), flags) {
            Ok(WaitStatus::StillAlive) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(Error::io("waiting for a child process", e.into())),
        }
    }

    fn kill(&mut self) {
        if !self.reaped {
            // ESRCH only means the group is already gone.
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }

    fn reap(&mut self) -> Result<ExitStatus, Error> {
        let status = self
            .child
            .wait()
            .map_err(|e| Error::io("waiting for a child process", e))?;
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

fn spawn_reader(
    stream: impl Read + Send + 'static,
    is_stdout: bool,
    tx: mpsc::Sender<(bool, String)>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    while matches!(buf.last(), Some(b'\n' | b'\r')) {
                        buf.pop();
                    }
                    buf.truncate(MAX_LINE_BYTES);
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send((is_stdout, line)).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

/// `exit status 2` or `killed by signal 9`.
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {sig}"),
        },
        (None, None) => "unknown exit".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process with this pid still exists (zombies count as gone
    /// for our purpose only once reaped, so check /proc's state too).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                !state.starts_with('Z')
            }
            Err(_) => false,
        }
    }

    #[test]
    fn tail_keeps_only_the_last_lines() {
        let mut tail = Tail::new(3);
        for l in ["a", "b", "c", "d", "e"] {
            tail.push(l);
        }
        assert_eq!(tail.to_string(), "c\nd\ne\n");
        assert_eq!(tail.last(2), "d\ne\n");
        assert_eq!(tail.last(10), "c\nd\ne\n");
    }

    #[test]
    fn run_returns_the_tail_of_stdout_and_stderr() {
        // stdout and stderr are read by separate threads, so only the order
        // within each stream is fixed.
        let out = Cmd::new("sh")
            .args([
                "-c",
                // stdout and stderr are read by separate threads, so give
                // the stdout lines time to arrive before the stderr one.
                "for i in 1 2 3 4 5; do echo out$i; done; sleep 0.3; echo err >&2",
            ])
            .tail_lines(10)
            .run()
            .unwrap();
        assert!(out.success());
        let mut lines: Vec<&str> = out.tail.lines().collect();
        lines.sort();
        assert_eq!(lines, ["err", "out1", "out2", "out3", "out4", "out5"]);

        let out = Cmd::new("seq")
            .args(["1", "5"])
            .tail_lines(3)
            .run()
            .unwrap();
        assert_eq!(out.tail.to_string(), "3\n4\n5\n");
    }

    #[test]
    fn capture_stdout_keeps_all_of_stdout_but_not_stderr() {
        let out = Cmd::new("sh")
            .args(["-c", "seq 1 100; echo noise >&2"])
            .tail_lines(2)
            .capture_stdout()
            .run()
            .unwrap();
        assert_eq!(out.stdout.lines().count(), 100);
        assert_eq!(out.stdout.lines().last(), Some("100"));
        assert!(!out.stdout.contains("noise"));
    }

    #[test]
    fn a_non_zero_exit_is_an_error_carrying_the_tail() {
        let err = Cmd::new("sh")
            .args(["-c", "echo 'fs/open.c:12: error: oops'; exit 3"])
            .run()
            .unwrap_err();
        match err {
            Error::ProcessFailed {
                command,
                status,
                tail,
            } => {
                assert_eq!(
                    command,
                    "sh -c \"echo 'fs/open.c:12: error: oops'; exit 3\""
                );
                assert_eq!(status, "exit status 3");
                assert_eq!(tail, "fs/open.c:12: error: oops\n");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn output_accepts_any_exit_status() {
        let out = Cmd::new("false").output().unwrap();
        assert!(!out.success());
        assert_eq!(out.status.and_then(|s| s.code()), Some(1));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = Cmd::new("/nonexistent/patchperf-no-such-tool")
            .run()
            .unwrap_err();
        assert!(matches!(err, Error::Spawn { .. }), "{err:?}");
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        // The shell starts a background sleeper (same process group) and
        // reports its pid; both must be gone after the timeout.
        let mut pids = Vec::new();
        let err = Cmd::new("sh")
            .args(["-c", "sleep 300 & echo $!; sleep 300"])
            .timeout(Duration::from_millis(700))
            .capture_stdout()
            .watch(&mut |ev| {
                if let Event::Line(l) = ev {
                    pids.push(l.parse::<i32>().unwrap());
                }
                Flow::Continue
            })
            .unwrap_err();
        assert!(matches!(err, Error::ProcessTimedOut { .. }), "{err:?}");
        assert_eq!(pids.len(), 1);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pids[0]), "background child {} survived", pids[0]);
    }

    #[test]
    fn a_watcher_can_stop_the_program_on_a_line() {
        let mut seen = Vec::new();
        let out = Cmd::new("sh")
            .args([
                "-c",
                "echo booting; echo 'Kernel panic - not syncing: x'; sleep 300",
            ])
            .watch(&mut |ev| match ev {
                Event::Line(l) => {
                    seen.push(l.to_string());
                    if l.contains("Kernel panic") {
                        Flow::Stop
                    } else {
                        Flow::Continue
                    }
                }
                Event::Tick => Flow::Continue,
            })
            .unwrap();
        assert!(out.stopped);
        assert_eq!(out.status, None);
        assert_eq!(seen, ["booting", "Kernel panic - not syncing: x"]);
        assert!(out.elapsed < Duration::from_secs(60));
    }

    #[test]
    fn quiet_programs_get_ticks() {
        let mut ticks = 0;
        let out = Cmd::new("sleep")
            .arg("0.7")
            .watch(&mut |ev| {
                if ev == Event::Tick {
                    ticks += 1;
                }
                Flow::Continue
            })
            .unwrap();
        assert!(out.success());
        assert!(ticks >= 2, "only {ticks} ticks in 0.7 s");
    }

    #[test]
    fn a_child_that_outlives_its_parent_is_killed_when_the_parent_exits() {
        let out = Cmd::new("sh")
            .args(["-c", "sleep 300 & echo $!"])
            .capture_stdout()
            .run()
            .unwrap();
        let pid: i32 = out.stdout.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid), "orphan {pid} survived");
    }

    #[test]
    fn stdin_file_feeds_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, "hello\n").unwrap();
        let out = Cmd::new("cat").stdin_file(&path).stdout_string().unwrap();
        assert_eq!(out, "hello");
    }

    #[test]
    fn display_quotes_arguments_with_spaces() {
        let cmd = Cmd::new("make").args(["CC=ccache gcc", "-j2"]);
        assert_eq!(cmd.display(), "make \"CC=ccache gcc\" -j2");
    }
}
