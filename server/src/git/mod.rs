//! The server's one external program: git, to read the commits of a range
//! a submission names. Each repository is kept as a bare mirror under the
//! configured directory (named by the sha256 of its normalised URL,
//! [`remote::Remote::key`]), cloned once and fetched when a range names
//! something it lacks; one git command at a time per mirror. URL, ranges
//! and the repository's content all come from outside, so every command
//! has a time limit and a cap on what it may print, runs in its own
//! process group that is killed on every way out ([`process`]), and takes
//! a slot of a bounded pool (per server, and per remote for clones and
//! fetches; a request finding none answers 503 with `Retry-After`). A
//! remote is reached only at an address the destination policy allows
//! ([`crate::destination`]), pinned, without redirects and with a short
//! limit on connecting and on a transfer that stalls; every way it can
//! fail is told to the caller in the same words. A mirror cloned for a
//! request that is refused is removed again, and the mirrors together stay
//! under a size bound, the least recently used going first ([`cache`]).

mod batch;
mod cache;
mod process;
pub mod remote;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use batch::{Batch, Object};
pub use cache::Usage;
use patchperf_common::digest::sha256_hex;
pub use process::bytes;
use process::{Failure, Groups};
use remote::{Remote, Route};
use tokio::process::Command;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::destination::{Destinations, UNREACHABLE};
use crate::{Config, Error};

/// Longest a request waits for a free git slot before it is answered 503.
const SLOT_WAIT: Duration = Duration::from_secs(2);

/// What a 503 for want of a slot tells the caller to wait.
const RETRY_AFTER: u64 = 30;
/// When to try a remote that could not be reached again, in seconds.
const UNREACHABLE_RETRY: u64 = 60;

/// Longest connecting to a remote may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where mirrors live, what may be mirrored, and the git commands running.
#[derive(Debug)]
pub struct Mirrors {
    dir: PathBuf,
    allow_local: bool,
    timeout: Duration,
    stall: Duration,
    policy: Destinations,
    max_bytes: u64,
    /// Every git command of this server takes one.
    slots: Arc<Semaphore>,
    /// Clones and fetches per remote (`host:port`).
    per_remote: usize,
    remotes: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// One lock per mirror: a clone or fetch must not race another, and a
    /// reader must not see a half-fetched mirror.
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    groups: Arc<Groups>,
    usage: Arc<Mutex<Usage>>,
}

/// One mirror, locked for the holder's git commands. Dropped without
/// [`Mirror::keep`] after it was cloned for this holder, it is removed.
#[derive(Debug)]
pub struct Mirror {
    path: PathBuf,
    timeout: Duration,
    groups: Arc<Groups>,
    slots: Arc<Semaphore>,
    fresh: bool,
    kept: bool,
    usage: Arc<Mutex<Usage>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// A clone or a fetch: the slots it holds while it runs.
struct RemoteSlots {
    _server: OwnedSemaphorePermit,
    _remote: Option<OwnedSemaphorePermit>,
}

impl Mirrors {
    /// The mirrors `config` describes: kept under `git_dir`; local
    /// repositories (an absolute path or `file://`) only with `local_git`,
    /// since they are the server's own disk; remotes at private addresses
    /// only with `allow_private_destinations`.
    pub fn new(config: &Config) -> Mirrors {
        cache::sweep(&config.git_dir);
        Mirrors {
            dir: config.git_dir.clone(),
            allow_local: config.local_git,
            timeout: config.git_timeout,
            stall: config.git_stall_timeout,
            policy: Destinations::new(config.allow_private_destinations),
            max_bytes: config.git_cache_max_bytes,
            slots: Arc::new(Semaphore::new(config.git_jobs.max(1))),
            per_remote: config.git_jobs_per_remote.max(1),
            remotes: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
            groups: Arc::new(Groups::default()),
            usage: Arc::new(Mutex::new(Usage {
                max_bytes: config.git_cache_max_bytes,
                ..Usage::default()
            })),
        }
    }

    /// The mirror of `url`, cloned when there is none yet, and fetched
    /// unless every one of `wanted` (commits, tags, branches) already
    /// names a commit in it.
    pub async fn open(&self, url: &str, wanted: &[&str]) -> Result<Mirror, Error> {
        let remote = Remote::parse(url)
            .map_err(|why| Error::Invalid(format!("{url:?} is not a git URL: {why}")))?;
        if matches!(remote, Remote::Local { .. }) && !self.allow_local {
            return Err(Error::Invalid(format!(
                "{url:?} is a path on the server; this server reads ranges only from remote \
                 repositories (serve --local-git allows paths)"
            )));
        }
        let path = self.dir.join(format!(
            "{}.git",
            &sha256_hex(remote.key().as_bytes())[..24]
        ));
        let lock = self.lock_of(&path);
        let mut mirror = Mirror {
            path,
            timeout: self.timeout,
            groups: Arc::clone(&self.groups),
            slots: Arc::clone(&self.slots),
            fresh: false,
            kept: false,
            usage: Arc::clone(&self.usage),
            _guard: lock.lock_owned().await,
        };
        if !mirror.path.join("HEAD").is_file() {
            self.clone_into(&mirror, &remote, url).await?;
            mirror.fresh = true;
        } else {
            cache::touch(&mirror.path);
            let mut known = true;
            for name in wanted {
                // A branch moves: only an object id can be trusted without
                // asking the remote.
                let id = name.len() >= 40 && name.bytes().all(|b| b.is_ascii_hexdigit());
                known &= id && mirror.resolve(name).await.is_ok();
            }
            if known {
                return Ok(mirror);
            }
            self.fetch(&mirror, &remote, url).await?;
        }
        self.evict(&mirror.path).await;
        Ok(mirror)
    }

    /// The URLs of the repositories mirrored (each mirror's `origin`), for
    /// a backup to name so that a restore can clone them again. Partial
    /// clones and anything else in the directory are passed over.
    pub async fn urls(&self) -> Result<Vec<String>, Error> {
        let mut dirs = match tokio::fs::read_dir(&self.dir).await {
            Ok(dirs) => dirs,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Error::Setup(format!("reading {}: {e}", self.dir.display())));
            }
        };
        let mut urls = Vec::new();
        while let Some(entry) = dirs
            .next_entry()
            .await
            .map_err(|e| Error::Setup(format!("reading {}: {e}", self.dir.display())))?
        {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "git") || !path.join("HEAD").is_file() {
                continue;
            }
            let git_dir = path.to_string_lossy().into_owned();
            let args = [
                "--git-dir",
                &git_dir,
                "config",
                "--get",
                "remote.origin.url",
            ];
            match process::run(
                command(&args, &Route::default()),
                &self.groups,
                self.timeout,
                64 * 1024,
            )
            .await
            {
                Ok(url) => urls.push(String::from_utf8_lossy(&url).trim().to_string()),
                Err(_) => {
                    tracing::warn!(mirror = %path.display(), "a mirror without an origin; left out");
                }
            }
        }
        urls.sort();
        Ok(urls)
    }

    fn lock_of(&self, path: &std::path::Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(path.to_path_buf()).or_default().clone()
    }

    async fn clone_into(&self, mirror: &Mirror, remote: &Remote, url: &str) -> Result<(), Error> {
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| Error::Internal(format!("creating {}: {e}", self.dir.display())))?;
        let partial = mirror.path.with_extension("partial");
        let _ = tokio::fs::remove_dir_all(&partial).await;
        let target = partial.to_string_lossy().into_owned();
        let normalised = remote.url();
        let args = ["clone", "--mirror", "--quiet", "--", &normalised, &target];
        let (cmd, _slots) = self.remote_command(remote, url, "clone", &args).await?;
        self.count_remote_read();
        if let Err(failure) = process::run(cmd, &self.groups, self.timeout, 0).await {
            let _ = tokio::fs::remove_dir_all(&partial).await;
            return Err(unreachable("clone", remote, url, failure));
        }
        tokio::fs::rename(&partial, &mirror.path)
            .await
            .map_err(|e| Error::Internal(format!("keeping the clone of {url}: {e}")))?;
        cache::touch(&mirror.path);
        Ok(())
    }

    async fn fetch(&self, mirror: &Mirror, remote: &Remote, url: &str) -> Result<(), Error> {
        let git_dir = mirror.path.to_string_lossy().into_owned();
        let (cmd, _slots) = self
            .remote_command(
                remote,
                url,
                "fetch",
                &[
                    "--git-dir",
                    &git_dir,
                    "fetch",
                    "--quiet",
                    "--prune",
                    "origin",
                ],
            )
            .await?;
        self.count_remote_read();
        process::run(cmd, &self.groups, self.timeout, 0)
            .await
            .map_err(|failure| unreachable("fetch", remote, url, failure))?;
        Ok(())
    }

    fn count_remote_read(&self) {
        self.usage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remote_reads += 1;
    }

    /// `git args` for a clone or fetch of `remote`: its slots taken, its
    /// route to the remote set. Refusals are told as any unreachable
    /// remote is; the detail goes to the log.
    async fn remote_command(
        &self,
        remote: &Remote,
        url: &str,
        verb: &str,
        args: &[&str],
    ) -> Result<(Command, RemoteSlots), Error> {
        let slots = self.remote_slots(remote).await?;
        let route = remote::route(remote, &self.policy, CONNECT_TIMEOUT, self.stall)
            .await
            .map_err(|why| {
                tracing::warn!(url, reason = %why, "git remote refused or unreachable");
                cannot_reach(verb, remote, url)
            })?;
        Ok((command(args, &route), slots))
    }

    async fn remote_slots(&self, remote: &Remote) -> Result<RemoteSlots, Error> {
        let per_remote = remote.endpoint().map(|endpoint| {
            let mut remotes = self.remotes.lock().unwrap_or_else(|e| e.into_inner());
            // Remotes nobody uses now are forgotten, so the map stays small.
            // (A permit holds its semaphore.)
            remotes.retain(|_, s| Arc::strong_count(s) > 1);
            let s = remotes
                .entry(endpoint.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_remote)));
            (endpoint, Arc::clone(s))
        });
        let remote_slot = match per_remote {
            Some((endpoint, s)) => {
                Some(take(s, &format!("every git slot for {endpoint} is busy")).await?)
            }
            None => None,
        };
        let server = take(
            Arc::clone(&self.slots),
            "every git slot of this server is busy",
        )
        .await?;
        Ok(RemoteSlots {
            _server: server,
            _remote: remote_slot,
        })
    }

    /// After a clone or fetch: counts the mirrors, and removes the least
    /// recently used (never `current` nor one in use) until the rest fit
    /// the bound.
    async fn evict(&self, current: &std::path::Path) {
        let dir = self.dir.clone();
        let listed = tokio::task::spawn_blocking(move || cache::list(&dir))
            .await
            .unwrap_or_default();
        let mut bytes: u64 = listed.iter().map(|m| m.bytes).sum();
        let mut mirrors = listed.len();
        let mut evicted = 0;
        for m in &listed {
            if self.max_bytes == 0 || bytes <= self.max_bytes {
                break;
            }
            if m.path == current {
                continue;
            }
            let Ok(_in_use) = self.lock_of(&m.path).try_lock_owned() else {
                continue;
            };
            tracing::info!(mirror = %m.path.display(), bytes = m.bytes, "evicting the least recently used mirror");
            cache::remove(&m.path);
            bytes -= m.bytes;
            mirrors -= 1;
            evicted += 1;
        }
        let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        usage.mirrors = mirrors;
        usage.bytes = bytes;
        usage.evicted += evicted;
        usage.counted = true;
    }

    /// What the mirrors take (counted once now if never yet), and how many
    /// git commands run.
    pub async fn usage(&self) -> Usage {
        let counted = self.usage.lock().unwrap_or_else(|e| e.into_inner()).counted;
        if !counted {
            let dir = self.dir.clone();
            let listed = tokio::task::spawn_blocking(move || cache::list(&dir))
                .await
                .unwrap_or_default();
            let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            usage.mirrors = listed.len();
            usage.bytes = listed.iter().map(|m| m.bytes).sum();
            usage.counted = true;
        }
        let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner()).clone();
        usage.running = self.groups.running();
        usage
    }

    /// Kills every git command running and lets none start: the server is
    /// stopping.
    pub fn stop(&self) {
        self.groups.kill_all();
    }
}

/// A permit of `slots`, waiting at most [`SLOT_WAIT`]; 503 with
/// `Retry-After` beyond it, saying `busy`.
async fn take(slots: Arc<Semaphore>, busy: &str) -> Result<OwnedSemaphorePermit, Error> {
    match tokio::time::timeout(SLOT_WAIT, slots.acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(Error::Unavailable {
            message: format!("{busy}; try again in {RETRY_AFTER} s"),
            retry_after: Some(RETRY_AFTER),
        }),
    }
}

/// The caller's error for a clone or fetch of `url` that failed: the same
/// words whatever went wrong there (the detail is logged), but the server's
/// own reasons (stopping, its side broken) as they are.
fn unreachable(verb: &str, remote: &Remote, url: &str, failure: Failure) -> Error {
    match failure {
        Failure::Stopping => stopping(),
        Failure::Broken(why) => Error::Internal(format!("git {verb} of {url}: {why}")),
        other => {
            tracing::warn!(url, failure = ?other, "git {verb} failed");
            cannot_reach(verb, remote, url)
        }
    }
}

/// A remote that could not be reached, for whatever reason, told as
/// transient (503, try again in a minute): the server cannot tell a remote
/// down for now from one that will never answer without saying which
/// internal hosts answer, and a CI job should retry a network outage, not
/// fail as if its request were wrong (a malformed URL is refused before
/// this, by `check_url`). A path on the server's own disk (`--local-git`)
/// that is no repository stays one: refused.
fn cannot_reach(verb: &str, remote: &Remote, url: &str) -> Error {
    let message = format!("cannot {verb} {url}: {UNREACHABLE}");
    match remote {
        Remote::Local { .. } => Error::Invalid(message),
        Remote::Network { .. } => Error::Unavailable {
            message,
            retry_after: Some(UNREACHABLE_RETRY),
        },
    }
}

fn stopping() -> Error {
    Error::Unavailable {
        message: "the server is stopping".into(),
        retry_after: Some(10),
    }
}

/// `git args` with what every command of the server's runs with, and
/// `route`'s settings.
fn command(args: &[&str], route: &Route) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(args)
        // Nothing may wait for a person: no password prompt, no ssh host
        // key question (a command that would ask fails instead). Neither
        // the machine's nor the user's git configuration applies, and no
        // proxy: git connects where the route says. Which transports a URL
        // may name is `check_url`'s, and the route's.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C");
    for proxy in [
        "http_proxy",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(proxy);
    }
    // Settings through the environment, not `-c`: a URL in a name may hold
    // `=`, which `-c name=value` cannot carry.
    cmd.env("GIT_CONFIG_COUNT", route.config.len().to_string());
    for (i, (name, value)) in route.config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), name)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    for (name, value) in &route.env {
        cmd.env(name, value);
    }
    cmd
}

/// The caller's error for a local git command's `failure`; `what` names
/// its output.
fn failed(what: &str, failure: Failure) -> Error {
    match failure {
        Failure::TooLarge(cap) => Error::TooLarge(format!("{what} is more than {}", bytes(cap))),
        Failure::Failed(why) => Error::Invalid(format!("{what}: {why}")),
        Failure::TimedOut(limit) => Error::Unavailable {
            message: format!("{what}: git took longer than {} s", limit.as_secs()),
            retry_after: None,
        },
        Failure::Stopping => stopping(),
        Failure::Broken(why) => Error::Internal(format!("{what}: {why}")),
    }
}

impl Mirror {
    /// Runs `git --git-dir=<mirror> args`: its standard output, at most
    /// `limit` bytes (0: output is not wanted). `what` names that output
    /// in a refusal ("the diff of commit …").
    pub async fn git(&self, args: &[&str], limit: usize, what: &str) -> Result<String, Error> {
        let out = self.git_bytes(args, limit, what).await?;
        String::from_utf8(out).map_err(|_| Error::Invalid(format!("{what} is not UTF-8 text")))
    }

    /// [`Mirror::git`] for output that need not be text (a mail archive's
    /// raw messages).
    pub async fn git_bytes(
        &self,
        args: &[&str],
        limit: usize,
        what: &str,
    ) -> Result<Vec<u8>, Error> {
        let _slot = take(
            Arc::clone(&self.slots),
            "every git slot of this server is busy",
        )
        .await?;
        let git_dir = self.path.to_string_lossy();
        let mut all = vec!["--git-dir", &git_dir];
        all.extend_from_slice(args);
        process::run(
            command(&all, &Route::default()),
            &self.groups,
            self.timeout,
            limit,
        )
        .await
        .map_err(|failure| failed(what, failure))
    }

    /// One `git cat-file --batch` over the mirror, to read many objects
    /// with one process; it holds a git slot until it is closed or dropped.
    pub async fn batch(&self) -> Result<Batch, Error> {
        let slot = take(
            Arc::clone(&self.slots),
            "every git slot of this server is busy",
        )
        .await?;
        let git_dir = self.path.to_string_lossy();
        let args = ["--git-dir", &git_dir, "cat-file", "--batch"];
        Batch::start(
            command(&args, &Route::default()),
            &self.groups,
            self.timeout,
            slot,
        )
        .map_err(|failure| failed("git cat-file", failure))
    }

    /// The full object id of the commit `name` names.
    pub async fn resolve(&self, name: &str) -> Result<String, Error> {
        patchperf_common::api::git::check_commit(name).map_err(Error::Invalid)?;
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
                name,
            )
            .await
            .map_err(|e| match e {
                Error::Invalid(_) | Error::TooLarge(_) => {
                    Error::Invalid(format!("`{name}` names no commit in the repository"))
                }
                other => other,
            })?;
        Ok(out.trim().to_string())
    }

    /// The request this mirror was opened for was accepted: a mirror
    /// cloned for it stays.
    pub fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        // Still locked here (the guard drops after this), so nobody opens
        // it while it is moved away.
        if self.fresh && !self.kept {
            tracing::info!(mirror = %self.path.display(), "removing the mirror cloned for a refused request");
            cache::remove(&self.path);
            let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            usage.dropped += 1;
            // Its bytes are not known here: counted again when next asked.
            usage.counted = false;
        }
    }
}
