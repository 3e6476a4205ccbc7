//! The server's one external program: git, to read the commits of a range
//! a submission names. Each repository is kept as a bare mirror under the
//! configured directory (named by the sha256 of its URL), cloned once and
//! fetched when a range names something it lacks; one git command at a
//! time per mirror, each with a time limit and a cap on what it may print,
//! because URL, ranges and the repository's content all come from outside.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchperf_common::api::git;
use patchperf_common::digest::sha256_hex;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::Error;

/// Most of git's standard error kept for a message.
const STDERR_TAIL: usize = 2000;

/// Where mirrors live and what may be mirrored.
#[derive(Debug)]
pub struct Mirrors {
    dir: PathBuf,
    allow_local: bool,
    timeout: Duration,
    /// One lock per mirror: a clone or fetch must not race another, and a
    /// reader must not see a half-fetched mirror.
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// One mirror, locked for the holder's git commands.
#[derive(Debug)]
pub struct Mirror {
    path: PathBuf,
    timeout: Duration,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Mirrors {
    /// Mirrors kept under `dir`; local repositories (an absolute path or
    /// `file://`) only with `allow_local`, since they are the server's own
    /// disk; every git command stops after `timeout`.
    pub fn new(dir: PathBuf, allow_local: bool, timeout: Duration) -> Mirrors {
        Mirrors {
            dir,
            allow_local,
            timeout,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// The mirror of `url`, cloned when there is none yet, and fetched
    /// unless every one of `wanted` (commits, tags, branches) already
    /// names a commit in it.
    pub async fn open(&self, url: &str, wanted: &[&str]) -> Result<Mirror, Error> {
        git::check_url(url)
            .map_err(|why| Error::Invalid(format!("{url:?} is not a git URL: {why}")))?;
        let local = url.starts_with('/') || url.starts_with("file://");
        if local && !self.allow_local {
            return Err(Error::Invalid(format!(
                "{url:?} is a path on the server; this server reads ranges only from remote \
                 repositories (serve --local-git allows paths)"
            )));
        }
        let path = self
            .dir
            .join(format!("{}.git", &sha256_hex(url.as_bytes())[..24]));
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(path.clone()).or_default().clone()
        };
        let mirror = Mirror {
            path,
            timeout: self.timeout,
            _guard: lock.lock_owned().await,
        };
        if !mirror.path.join("HEAD").is_file() {
            mirror.clone_from(&self.dir, url).await?;
        } else {
            let mut known = true;
            for name in wanted {
                // A branch moves: only an object id can be trusted without
                // asking the remote.
                let id = name.len() >= 40 && name.bytes().all(|b| b.is_ascii_hexdigit());
                known &= id && mirror.resolve(name).await.is_ok();
            }
            if !known {
                mirror
                    .git(&["fetch", "--quiet", "--prune", "origin"], 0)
                    .await
                    .map_err(|why| Error::Invalid(format!("cannot fetch {url}: {why}")))?;
            }
        }
        Ok(mirror)
    }
}

impl Mirror {
    async fn clone_from(&self, dir: &Path, url: &str) -> Result<(), Error> {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| Error::Internal(format!("creating {}: {e}", dir.display())))?;
        let partial = self.path.with_extension("partial");
        let _ = tokio::fs::remove_dir_all(&partial).await;
        let target = partial.to_string_lossy().into_owned();
        run(
            Command::new("git").args(["clone", "--mirror", "--quiet", "--", url, &target]),
            self.timeout,
            0,
        )
        .await
        .map_err(|why| Error::Invalid(format!("cannot clone {url}: {why}")))?;
        tokio::fs::rename(&partial, &self.path)
            .await
            .map_err(|e| Error::Internal(format!("keeping the clone of {url}: {e}")))
    }

    /// Runs `git --git-dir=<mirror> args`, returning at most `limit` bytes
    /// of its standard output (0: output is not wanted).
    pub async fn git(&self, args: &[&str], limit: usize) -> Result<String, String> {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir").arg(&self.path).args(args);
        run(&mut cmd, self.timeout, limit).await
    }

    /// The full object id of the commit `name` names.
    pub async fn resolve(&self, name: &str) -> Result<String, String> {
        git::check_commit(name)?;
        let spec = format!("{name}^{{commit}}");
        let out = self
            .git(
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &spec,
                ],
                200,
            )
            .await
            .map_err(|_| format!("`{name}` names no commit in the repository"))?;
        Ok(out.trim().to_string())
    }
}

/// Runs `cmd` to its end within `timeout`; its output up to `limit` bytes,
/// or why it failed (git's last words, or that it printed more than
/// `limit`).
async fn run(cmd: &mut Command, timeout: Duration, limit: usize) -> Result<String, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing may wait for a person: no password prompt, no ssh host
        // key question (a command that would ask fails instead). Which
        // transports a URL may name is `check_url`'s.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("git's output was not captured".into());
    };
    let work = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        let (mut stdout, mut stderr) = (stdout.take(cap), stderr.take(1 << 20));
        let (read_out, read_err) =
            tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
        read_out
            .and(read_err)
            .map_err(|e| format!("reading git's output: {e}"))?;
        if out.len() > limit {
            return Err(format!("git printed more than {} MiB", limit >> 20));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| format!("waiting for git: {e}"))?;
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            let start = err.len().saturating_sub(STDERR_TAIL);
            let start = (start..err.len())
                .find(|&i| err.is_char_boundary(i))
                .unwrap_or(err.len());
            return Err(format!("git failed ({status}): {}", err[start..].trim()));
        }
        String::from_utf8(out).map_err(|_| "git printed text that is not UTF-8".to_string())
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!("git took longer than {} s", timeout.as_secs())),
    }
}
