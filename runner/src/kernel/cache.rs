//! The runner's cache directory: unpacked source trees, git mirrors, built
//! kernels, ccache's objects and per-job scratch trees. One runner uses a
//! cache at a time (an exclusive `flock` on `lock`); scratch trees a crashed
//! runner left behind are removed when the next one takes the lock.
//!
//! Location: `$PATCHPERF_CACHE`, else `/var/cache/patchperf`. Layout:
//!
//! ```text
//! lock                      flock(2) held while a job prepares kernels
//! ccache/                   CCACHE_DIR for every kernel build
//! sources/<name>/           a tarball unpacked once, never patched
//! sources/<name>/.build-<k> the base kernel's build tree (make O=), kept so
//!                           patched builds only recompile what a patch touches
//! git/<hash>.git            bare mirror of a git URL
//! git/<hash>.git-<commit>/  worktree of a base commit, never patched; the
//!                           few used last are kept (`fetch::git_cache`)
//! kernels/<key>/            a built kernel: bzImage, config, kernel.json, build.log
//! work/<tmp>/               a job's patched trees and boot directories, removed
//!                           when the job ends
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::Error;

/// Environment variable naming the cache directory.
pub const CACHE_ENV: &str = "PATCHPERF_CACHE";
/// The cache directory when [`CACHE_ENV`] is not set.
pub const DEFAULT_CACHE_DIR: &str = "/var/cache/patchperf";

/// A cache directory (not yet locked).
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache named by `$PATCHPERF_CACHE`, else `/var/cache/patchperf`.
    pub fn from_env() -> Cache {
        match std::env::var_os(CACHE_ENV) {
            Some(dir) if !dir.is_empty() => Cache::at(dir),
            _ => Cache::at(DEFAULT_CACHE_DIR),
        }
    }

    /// The cache rooted at `root` (made absolute: tools run in other
    /// directories and mount namespaces are handed paths inside it).
    pub fn at(root: impl Into<PathBuf>) -> Cache {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        Cache { root }
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the cache for this process (waiting for another runner to
    /// finish, and saying so on standard error), creates its directories
    /// and clears scratch trees left by a runner that died.
    pub fn lock(&self) -> Result<CacheLock, Error> {
        self.lock_telling(|path| {
            eprintln!(
                "patchperf-runner: waiting for the runner that holds {} (one runner uses a \
                 cache at a time; PATCHPERF_CACHE names another)",
                path.display()
            );
        })
    }

    /// [`Cache::lock`], calling `waiting` with the lock's path when another
    /// process holds it, before waiting for it.
    pub fn lock_telling(&self, waiting: impl FnOnce(&Path)) -> Result<CacheLock, Error> {
        for dir in [
            self.root.clone(),
            self.ccache_dir(),
            self.sources_dir(),
            self.git_dir(),
            self.kernels_dir(),
            self.work_dir(),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        let path = self.root.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
                waiting(&path);
                Flock::lock(file, FlockArg::LockExclusive)
                    .map_err(|(_, e)| Error::io(format!("locking {}", path.display()), e.into()))?
            }
            Err((_, e)) => return Err(Error::io(format!("locking {}", path.display()), e.into())),
        };
        let entries = std::fs::read_dir(self.work_dir())
            .map_err(|e| Error::io(format!("reading {}", self.work_dir().display()), e))?;
        for entry in entries.flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
        Ok(CacheLock {
            cache: self.clone(),
            _lock: lock,
        })
    }

    /// `ccache/`.
    pub fn ccache_dir(&self) -> PathBuf {
        self.root.join("ccache")
    }

    /// `sources/`.
    pub fn sources_dir(&self) -> PathBuf {
        self.root.join("sources")
    }

    /// `git/`.
    pub fn git_dir(&self) -> PathBuf {
        self.root.join("git")
    }

    /// `kernels/`.
    pub fn kernels_dir(&self) -> PathBuf {
        self.root.join("kernels")
    }

    /// `work/`.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join("work")
    }
}

/// A cache this process holds; dropping it lets the next runner in.
#[derive(Debug)]
pub struct CacheLock {
    cache: Cache,
    _lock: Flock<File>,
}

impl CacheLock {
    /// The locked cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// A fresh scratch directory under `work/`, removed (with everything in
    /// it) when dropped.
    pub fn scratch(&self, label: &str) -> Result<tempfile::TempDir, Error> {
        tempfile::Builder::new()
            .prefix(&format!("{label}-"))
            .tempdir_in(self.cache.work_dir())
            .map_err(|e| Error::io("creating a scratch directory", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locking_creates_the_layout_and_clears_old_scratch_trees() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let left_over = dir.path().join("work/job-crashed/linux");
        std::fs::create_dir_all(&left_over).unwrap();
        let lock = cache.lock().unwrap();
        for sub in ["ccache", "sources", "git", "kernels", "work"] {
            assert!(dir.path().join(sub).is_dir(), "{sub} missing");
        }
        assert!(!left_over.exists());
        let scratch = lock.scratch("job").unwrap();
        let path = scratch.path().to_path_buf();
        assert!(path.starts_with(dir.path().join("work")));
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn waiting_for_another_holder_is_said_and_the_lock_follows_its_release() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let mut said = None;
        let held = cache
            .lock_telling(|p| said = Some(p.to_path_buf()))
            .unwrap();
        assert_eq!(said, None, "nobody held it");
        let (tx, rx) = std::sync::mpsc::channel();
        let other = {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let lock = cache.lock_telling(|p| tx.send(p.to_path_buf()).unwrap());
                lock.map(drop)
            })
        };
        // The second taker says it waits, then gets the lock once it is free.
        let path = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(path, dir.path().join("lock"));
        drop(held);
        other.join().unwrap().unwrap();
    }
}
