//! Running one git command: in its own process group, both pipes read at
//! once (git blocks when a pipe it writes is full, so a reader that waits
//! on one while the other fills never sees the end), standard output
//! capped (the whole group killed the moment it goes over), a time limit,
//! and the group killed on every way out: the limit, the cap, the caller
//! dropping the future (a client that disconnects), and the server
//! stopping ([`Groups::kill_all`]). Killing only `git` would leave its
//! helpers (`git remote-https`, `git index-pack`) running with nobody to
//! reap them.

use std::collections::HashSet;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// Most of git's standard error kept for a message.
const STDERR_TAIL: usize = 2000;

/// Why a command gave no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// It printed more than the cap (this many bytes).
    TooLarge(usize),
    /// It ended unsuccessfully; git's last words.
    Failed(String),
    /// It ran longer than the limit.
    TimedOut(Duration),
    /// The server is stopping: no new git command starts.
    Stopping,
    /// It could not be run or read (our side).
    Broken(String),
}

/// The process groups of the git commands running now, so that a server
/// that stops kills them all. A group is in the set from its spawn until
/// just before its leader is reaped: while the leader is unreaped its id
/// cannot name another group, so a kill never reaches a stranger.
#[derive(Debug, Default)]
pub struct Groups {
    inner: Mutex<GroupSet>,
}

#[derive(Debug, Default)]
struct GroupSet {
    running: HashSet<i32>,
    stopped: bool,
}

impl Groups {
    fn with<T>(&self, f: impl FnOnce(&mut GroupSet) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Kills every running group and lets no new one start.
    pub fn kill_all(&self) {
        self.with(|set| {
            set.stopped = true;
            for &pgid in &set.running {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        });
    }

    /// How many git commands run now.
    pub fn running(&self) -> usize {
        self.with(|set| set.running.len())
    }

    /// Kills group `pgid` if it is still in the set, and takes it out.
    fn end(&self, pgid: i32) {
        self.with(|set| {
            if set.running.remove(&pgid) {
                // ESRCH only means every member is gone already.
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        });
    }
}

/// One spawned command's group: killed when dropped before it was ended.
pub(super) struct Group {
    groups: Arc<Groups>,
    pgid: i32,
}

impl Drop for Group {
    fn drop(&mut self) {
        self.groups.end(self.pgid);
    }
}

/// Runs `cmd` (its environment already set) to its end within `timeout`;
/// its standard output when it succeeds and printed at most `limit` bytes.
pub async fn run(
    cmd: Command,
    groups: &Arc<Groups>,
    timeout: Duration,
    limit: usize,
) -> Result<Vec<u8>, Failure> {
    let (mut child, group) = spawn(cmd, groups, Stdio::null())?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(Failure::Broken("git's output was not captured".into()));
    };
    let work = async {
        let (out, err) = tokio::try_join!(read_capped(stdout, limit), read_tail(stderr))?;
        let status = finish(&mut child, group).await?;
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            return Err(Failure::Failed(format!(
                "git failed ({status}): {}",
                err.trim()
            )));
        }
        Ok(out)
    };
    // Whatever ends `work` early (the limit, the cap, a dropped caller)
    // drops `group` unended, which kills it.
    match tokio::time::timeout(timeout, work).await {
        // Killed because the server stops: say so, not what git said.
        Ok(Err(Failure::Failed(_))) if groups.with(|set| set.stopped) => Err(Failure::Stopping),
        Ok(result) => result,
        Err(_) => Err(Failure::TimedOut(timeout)),
    }
}

/// Starts `cmd` in a process group of its own, registered in `groups`,
/// its standard output and error piped and its standard input `stdin`.
pub(super) fn spawn(
    mut cmd: Command,
    groups: &Arc<Groups>,
    stdin: Stdio,
) -> Result<(Child, Group), Failure> {
    cmd.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and makes
    // one async-signal-safe system call (prctl): git is killed when the
    // thread that spawned it ends, which for a tokio worker thread is the
    // server's end, even when that end is a SIGKILL.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    // Registered under the same lock that a stop takes, so no group
    // starts after `kill_all` unseen.
    let mut set = groups.inner.lock().unwrap_or_else(|p| p.into_inner());
    if set.stopped {
        return Err(Failure::Stopping);
    }
    let child = cmd
        .spawn()
        .map_err(|e| Failure::Broken(format!("cannot run git: {e}")))?;
    let Some(pgid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(Failure::Broken("git has no process id".into()));
    };
    set.running.insert(pgid);
    let group = Group {
        groups: Arc::clone(groups),
        pgid,
    };
    Ok((child, group))
}

/// All of `pipe`, or [`Failure::TooLarge`] as soon as it passes `limit`.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, limit: usize) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let mut chunk = vec![0; 64 << 10];
    loop {
        let n = pipe
            .read(&mut chunk)
            .await
            .map_err(|e| Failure::Broken(format!("reading git's output: {e}")))?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > limit {
            return Err(Failure::TooLarge(limit));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// The last [`STDERR_TAIL`] bytes of `pipe`, read to its end.
pub(super) async fn read_tail(mut pipe: impl AsyncRead + Unpin) -> Result<Vec<u8>, Failure> {
    let mut tail = Vec::new();
    let mut chunk = vec![0; 8 << 10];
    loop {
        let n = pipe
            .read(&mut chunk)
            .await
            .map_err(|e| Failure::Broken(format!("reading git's errors: {e}")))?;
        if n == 0 {
            let start = tail.len().saturating_sub(STDERR_TAIL);
            return Ok(tail.split_off(start));
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 4 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
}

/// Waits until git exits (its pipes are closed already), kills what is
/// left of its group while its id still names it, then reaps it.
pub(super) async fn finish(child: &mut Child, group: Group) -> Result<ExitStatus, Failure> {
    let pid = Pid::from_raw(group.pgid);
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    let mut pause = Duration::from_millis(1);
    loop {
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Ok(_) => break,
            Err(e) => return Err(Failure::Broken(format!("waiting for git: {e}"))),
        }
    }
    // Ends the group (a helper that closed its pipes but lingers goes
    // too) and takes it out of the set before the leader is reaped.
    drop(group);
    child
        .wait()
        .await
        .map_err(|e| Failure::Broken(format!("waiting for git: {e}")))
}

/// `n` bytes in the largest unit that keeps it at 1 or more, to a tenth:
/// `512 bytes`, `64 KiB`, `16 MiB`, `15.5 MiB`.
pub fn bytes(n: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    let (unit, size) = if n >= MIB {
        ("MiB", MIB)
    } else if n >= KIB {
        ("KiB", KIB)
    } else {
        return format!("{n} bytes");
    };
    if n % size == 0 {
        format!("{} {unit}", n / size)
    } else {
        // Exact below 2^52 bytes, which no limit here comes near.
        #[allow(clippy::cast_precision_loss)]
        let x = n as f64 / size as f64;
        format!("{x:.1} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn sizes_are_written_in_a_unit_that_is_not_zero() {
        assert_eq!(bytes(200), "200 bytes");
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(16 << 20), "16 MiB");
        assert_eq!(bytes((31 << 19) + 5), "15.5 MiB");
        assert_eq!(bytes(1536), "1.5 KiB");
    }

    #[tokio::test]
    async fn output_over_the_cap_is_refused_at_once_while_errors_keep_coming() {
        let groups = Arc::new(Groups::default());
        // 8 MiB on stdout and endless stderr: waiting for stderr's end
        // before noticing the cap would never end.
        let cmd = sh("head -c 8388608 /dev/zero & yes err >&2");
        let started = std::time::Instant::now();
        let got = run(cmd, &groups, Duration::from_secs(120), 1 << 20).await;
        assert_eq!(got, Err(Failure::TooLarge(1 << 20)));
        assert!(started.elapsed() < Duration::from_secs(60));
        assert_eq!(groups.running(), 0);
    }

    #[tokio::test]
    async fn a_failure_says_what_git_said_last() {
        let groups = Arc::new(Groups::default());
        let got = run(
            sh("echo out; echo fatal: no >&2; exit 3"),
            &groups,
            Duration::from_secs(60),
            100,
        )
        .await;
        match got {
            Err(Failure::Failed(why)) => assert!(why.ends_with("fatal: no"), "{why}"),
            other => panic!("{other:?}"),
        }
        let got = run(sh("printf ok"), &groups, Duration::from_secs(60), 100).await;
        assert_eq!(got, Ok(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn a_stopped_server_starts_no_git_and_kills_what_runs() {
        let groups = Arc::new(Groups::default());
        let running = {
            let groups = Arc::clone(&groups);
            tokio::spawn(async move {
                run(
                    sh("sleep 600 & sleep 600"),
                    &groups,
                    Duration::from_secs(900),
                    100,
                )
                .await
            })
        };
        while groups.running() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        groups.kill_all();
        assert_eq!(running.await.unwrap(), Err(Failure::Stopping));
        assert_eq!(
            run(sh("true"), &groups, Duration::from_secs(9), 1).await,
            Err(Failure::Stopping)
        );
    }
}
