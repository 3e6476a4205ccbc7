//! The one place the perf collectors start processes: perf in the background
//! for the measured window (stopped with SIGINT, which is how perf expects to
//! be told to write out what it has), or perf run to completion with a time
//! limit. Each perf runs in its own process group, killed if we give up on it
//! or drop it, and its stderr goes to a file whose last lines end up in error
//! messages.
//!
//! `crate::proc` runs programs to completion and interleaves stdout with
//! stderr in its tail; perf needs two things it does not do: a background
//! process stopped with SIGINT at a moment we choose, and stdout (perf
//! script's samples, tens of megabytes) kept apart from stderr in a file.

use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// How many stderr lines an error message carries.
const TAIL_LINES: usize = 12;

/// A perf process running in the background.
#[derive(Debug)]
pub struct Background {
    child: Child,
    what: String,
    stderr: PathBuf,
}

impl Background {
    /// Starts `command` with stdin closed, stdout discarded and stderr in
    /// `stderr`.
    pub fn spawn(mut command: Command, what: &str, stderr: &Path) -> Result<Self, String> {
        let child = spawn(&mut command, what, Stdio::null(), stderr)?;
        Ok(Self {
            child,
            what: what.to_string(),
            stderr: stderr.to_path_buf(),
        })
    }

    /// Sends SIGINT and waits up to `limit` for the process to write its
    /// output and exit. Fails if it had already exited (perf stopping on its
    /// own means it failed), did not exit in time, or exited with an error.
    pub fn interrupt(mut self, limit: Duration) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!(
                "{} stopped before the measured seconds ended ({}){}",
                self.what,
                describe(status),
                tail(&self.stderr)
            ));
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        kill(pid, Signal::SIGINT)
            .map_err(|err| format!("cannot send SIGINT to {}: {err}", self.what))?;
        let status = wait_with_limit(&mut self.child, limit).ok_or_else(|| {
            format!(
                "{} did not finish within {} s of SIGINT{}",
                self.what,
                limit.as_secs(),
                tail(&self.stderr)
            )
        })?;
        // perf re-raises SIGINT after writing its output, so dying of SIGINT
        // is its normal way to stop.
        if status.success() || status.signal() == Some(Signal::SIGINT as i32) {
            Ok(())
        } else {
            Err(format!(
                "{} failed ({}){}",
                self.what,
                describe(status),
                tail(&self.stderr)
            ))
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
) -> Result<(), String> {
    let out =
        File::create(stdout).map_err(|err| format!("cannot create {}: {err}", stdout.display()))?;
    let mut child = spawn(&mut command, what, Stdio::from(out), stderr)?;
    let Some(status) = wait_with_limit(&mut child, limit) else {
        stop_group(&mut child);
        return Err(format!(
            "{what} did not finish within {} s{}",
            limit.as_secs(),
            tail(stderr)
        ));
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}){}",
            describe(status),
            tail(stderr)
        ))
    }
}

fn spawn(command: &mut Command, what: &str, stdout: Stdio, stderr: &Path) -> Result<Child, String> {
    let err =
        File::create(stderr).map_err(|err| format!("cannot create {}: {err}", stderr.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(err))
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot start {what}: {err}"))
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
