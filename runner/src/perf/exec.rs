//! The one place the perf collectors start processes: perf in the background
//! for the measured window (started and waited for until it counts, stopped
//! with SIGINT, which is how perf expects to be told to write out what it
//! has), or perf run to completion with a time limit. Each perf runs in its own process group, killed if we give up on it
//! or drop it, and its stderr goes to a file whose last lines end up in error
//! messages.
//!
//! `crate::proc` runs programs to completion and interleaves stdout with
//! stderr in its tail; perf needs what it does not do: a background process
//! we wait for until it is ready and stop with SIGINT at a moment we choose,
//! and stdout (perf script's samples, tens of megabytes) kept apart from
//! stderr in a file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::stat::Mode;
use nix::unistd::{Pid, mkfifo};

use crate::error::{PerfError, ProcessProblem};

/// How many stderr lines an error message carries.
const TAIL_LINES: usize = 12;

/// Where one perf collector is in its start → stop → collect cycle: a
/// stop needs a start, and a read of the output needs a stop since the last
/// read (perf writes its last interval or its buffers when interrupted).
#[derive(Debug)]
pub struct Lifecycle {
    /// `perf stat`, `perf record`: for the errors.
    what: &'static str,
    running: Option<Background>,
    stopped: bool,
}

impl Lifecycle {
    /// A collector of `what` not started yet.
    pub fn new(what: &'static str) -> Self {
        Lifecycle {
            what,
            running: None,
            stopped: false,
        }
    }

    /// Starts `command` as [`Background::start`] does.
    pub fn start(
        &mut self,
        command: Command,
        dir: &Path,
        name: &str,
        limit: Duration,
    ) -> Result<(), PerfError> {
        self.running = Some(Background::start(command, self.what, dir, name, limit)?);
        Ok(())
    }

    /// Stops the started perf with SIGINT, waiting at most `limit`.
    pub fn stop(&mut self, limit: Duration) -> Result<(), PerfError> {
        let running = self.running.take().ok_or(PerfError::NotRunning {
            what: self.what,
            step: "started",
        })?;
        running.interrupt(limit)?;
        self.stopped = true;
        Ok(())
    }

    /// Checks that perf stopped since the output was last read, so that it
    /// is read once per run.
    pub fn take_stopped(&mut self) -> Result<(), PerfError> {
        if std::mem::take(&mut self.stopped) {
            Ok(())
        } else {
            Err(PerfError::NotRunning {
                what: self.what,
                step: "stopped",
            })
        }
    }
}

/// A perf process running in the background.
#[derive(Debug)]
pub struct Background {
    child: Child,
    what: String,
    stderr: PathBuf,
}

impl Background {
    /// Starts `command` (a `perf stat` or `perf record`) with stdin closed,
    /// stdout discarded and stderr in `<dir>/<name>.stderr`, and returns
    /// once perf is counting, so that perf's own start-up (opening counters
    /// on every CPU, mapping buffers, listing the running tasks) happens
    /// before the measured seconds and not in them.
    ///
    /// Readiness comes from perf's control channel (`--control
    /// fifo:ctl,ack`, perf 5.9+): perf reads commands only once its event
    /// loop runs, with the counters enabled, and answers each with `ack`; we
    /// send `ping` and wait for the answer, for at most `limit`.
    pub fn start(
        mut command: Command,
        what: &str,
        dir: &Path,
        name: &str,
        limit: Duration,
    ) -> Result<Self, PerfError> {
        let ctl = dir.join(format!("{name}.ctl"));
        let ack = dir.join(format!("{name}.ack"));
        for fifo in [&ctl, &ack] {
            mkfifo(fifo, Mode::S_IRUSR | Mode::S_IWUSR).map_err(|err| PerfError::MakeFifo {
                path: fifo.to_path_buf(),
                source: err,
            })?;
        }
        command.arg(format!(
            "--control=fifo:{},{}",
            ctl.display(),
            ack.display()
        ));
        let stderr = dir.join(format!("{name}.stderr"));
        let child = spawn(&mut command, what, Stdio::null(), &stderr)?;
        let mut background = Self {
            child,
            what: what.to_string(),
            stderr,
        };
        background.wait_ready(&ctl, &ack, limit)?;
        Ok(background)
    }

    fn wait_ready(&mut self, ctl: &Path, ack: &Path, limit: Duration) -> Result<(), PerfError> {
        let fifo_error = |path: &Path, err: std::io::Error| PerfError::ControlFifo {
            what: self.what.clone(),
            path: path.to_path_buf(),
            source: err,
        };
        // Read-write opens of a fifo never block, whether or not perf has
        // opened its end yet.
        let mut ctl_file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(ctl)
            .map_err(|err| fifo_error(ctl, err))?;
        let mut ack_file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(ack)
            .map_err(|err| fifo_error(ack, err))?;
        ctl_file
            .write_all(b"ping\n")
            .map_err(|err| fifo_error(ctl, err))?;
        let deadline = Instant::now() + limit;
        let mut answer = [0u8; 16];
        loop {
            match ack_file.read(&mut answer) {
                Ok(n) if n > 0 => return Ok(()),
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(err) => return Err(fifo_error(ack, err)),
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.problem(ProcessProblem::FailedToStart(describe(status))));
            }
            if Instant::now() > deadline {
                return Err(self.problem(ProcessProblem::NotCounting(limit.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Sends SIGINT and waits up to `limit` for the process to write its
    /// output and exit. Fails if it had already exited (perf stopping on its
    /// own means it failed), did not exit in time, or exited with an error.
    pub fn interrupt(mut self, limit: Duration) -> Result<(), PerfError> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(self.problem(ProcessProblem::StoppedEarly(describe(status))));
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        kill(pid, Signal::SIGINT).map_err(|err| PerfError::Signal {
            what: self.what.clone(),
            source: err,
        })?;
        let status = wait_with_limit(&mut self.child, limit)
            .ok_or_else(|| self.problem(ProcessProblem::IgnoredSigint(limit.as_secs())))?;
        // perf re-raises SIGINT after writing its output, so dying of SIGINT
        // is its normal way to stop.
        if status.success() || status.signal() == Some(Signal::SIGINT as i32) {
            Ok(())
        } else {
            Err(self.problem(ProcessProblem::Failed(describe(status))))
        }
    }

    /// `problem` of this perf, with the end of its stderr.
    fn problem(&self, problem: ProcessProblem) -> PerfError {
        PerfError::Process {
            what: self.what.clone(),
            problem,
            stderr: tail(&self.stderr),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        stop_group(&mut self.child);
    }
}

/// Runs `command` to completion with stdout in `stdout` and stderr in
/// `stderr`, killing it after `limit`.
pub fn run(
    mut command: Command,
    what: &str,
    stdout: &Path,
    stderr: &Path,
    limit: Duration,
) -> Result<(), PerfError> {
    let out = File::create(stdout)
        .map_err(|err| PerfError::io(format!("cannot create {}", stdout.display()), err))?;
    let mut child = spawn(&mut command, what, Stdio::from(out), stderr)?;
    let Some(status) = wait_with_limit(&mut child, limit) else {
        stop_group(&mut child);
        return Err(PerfError::Process {
            what: what.to_string(),
            problem: ProcessProblem::TimedOut(limit.as_secs()),
            stderr: tail(stderr),
        });
    };
    if status.success() {
        Ok(())
    } else {
        Err(PerfError::Process {
            what: what.to_string(),
            problem: ProcessProblem::Failed(describe(status)),
            stderr: tail(stderr),
        })
    }
}

fn spawn(
    command: &mut Command,
    what: &str,
    stdout: Stdio,
    stderr: &Path,
) -> Result<Child, PerfError> {
    let err = File::create(stderr)
        .map_err(|err| PerfError::io(format!("cannot create {}", stderr.display()), err))?;
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(err))
        .process_group(0)
        .spawn()
        .map_err(|err| PerfError::Spawn {
            what: what.to_string(),
            source: err,
        })
}

/// Waits for `child` to exit, for at most `limit`; `None` if it did not.
fn wait_with_limit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// Kills the child's whole process group if it is still running and reaps it.
fn stop_group(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        // The child leads its own group (process_group(0)), so its pid is the
        // group id.
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
        let _ = child.wait();
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

/// The last lines of a stderr file, as `: line; line; …` for an error
/// message (empty when there is nothing to show).
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    if lines[start..].is_empty() {
        String::new()
    } else {
        format!(": {}", lines[start..].join("; "))
    }
}
