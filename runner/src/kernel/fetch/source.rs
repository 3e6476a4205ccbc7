//! Fetch: the base source tree of a job, as a pristine tree in the cache
//! that is never patched (the base kernel builds in it), and the patched
//! side's tree: an overlay on the pristine tree where overlayfs can be
//! mounted ([`Tree::overlay_on`], nothing copied), else a fresh copy of it
//! ([`Tree::copy_of`]).
//!
//! Two kinds of source:
//! - a tarball (`linux-source-6.12` is Debian's
//!   `/usr/src/linux-source-6.12.tar.xz`, the default; [`DEFAULT_TARBALL`]),
//!   unpacked once into `sources/<name>/`;
//! - a git URL and commit: a bare mirror under `git/` and a worktree of the
//!   commit. Worktree files get the commit's time as mtime, like a tarball's
//!   files carry theirs, so a patched tree that reuses the base build tree
//!   recompiles only the files the patches touch. An overlay on the
//!   worktree shows its `.git` link, whose target (HEAD, the index, in the
//!   mirror's `worktrees/`) is outside the overlay and stays the pristine
//!   worktree's: the overlay is patched with `git apply`, which moves
//!   neither, and every command in it (the build too) runs with
//!   `GIT_INDEX_FILE` on a copy of the index in the job's scratch directory
//!   and `GIT_OPTIONAL_LOCKS=0`, so a `git status` or `git update-index
//!   --refresh` there (Kbuild's `scripts/setlocalversion` runs git in the
//!   tree) cannot write the pristine worktree's index.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::stat::{UtimensatFlags, utimensat};
use nix::sys::time::TimeSpec;
use patchperf_common::api::git;
use patchperf_common::digest::sha256_hex;
use patchperf_common::protocol::BaseSource;
use sha2::{Digest, Sha256};

use crate::Error;
use crate::kernel::cache::{Cache, CacheLock};
use crate::kernel::fetch::git_cache;
use crate::kernel::fetch::tree_view::View;
use crate::proc::Cmd;

/// Where named tarballs live (`<name>.tar.xz` and friends).
pub const TARBALL_DIR: &str = "/usr/src";

/// The default base of a submission or job file that names none: Debian's
/// newest kernel source package, the tree today's patches are written
/// closest to (README, "Kernel pipeline"). The seeds' ports to 6.1 name
/// `linux-source-6.1` themselves.
pub const DEFAULT_TARBALL: &str = "linux-source-6.12";

/// Names of entries inside a pristine tree that belong to patchperf (build
/// trees), not to the source; copies leave them out.
pub const BUILD_DIR_PREFIX: &str = ".build-";

const UNPACK_LIMIT: Duration = Duration::from_secs(30 * 60);
const GIT_LIMIT: Duration = Duration::from_secs(2 * 60 * 60);
const COPY_LIMIT: Duration = Duration::from_secs(30 * 60);

/// How a pristine tree was made, which decides how its copies are made and
/// patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceKind {
    /// An unpacked tarball: patches go on with `patch -p1`, on an overlay
    /// or a copy (`cp -a`).
    Tarball,
    /// A worktree of `commit` in the bare `mirror`: an overlay on it is
    /// patched with `git apply` (HEAD and index untouched), a copy is a new
    /// worktree patched with `git am`.
    Git {
        /// The bare mirror.
        mirror: PathBuf,
        /// Full commit id.
        commit: String,
        /// Committer time, used as every file's mtime.
        commit_time: i64,
    },
}

/// A base tree in the cache, never patched.
#[derive(Debug, Clone)]
pub struct Pristine {
    /// The tree's top directory (holds the top-level Makefile).
    pub dir: PathBuf,
    /// The source as a kernel identity names it: `<commit id>`, or
    /// `<tarball name> sha256:<hex>`.
    pub source_id: String,
    /// How it was made.
    pub kind: SourceKind,
}

/// Fetch step: makes sure the pristine tree of `base` is in the cache.
pub fn fetch(lock: &CacheLock, base: &BaseSource) -> Result<Pristine, Error> {
    match base {
        BaseSource::Tarball { name } => fetch_tarball(lock.cache(), name),
        BaseSource::Git { url, commit } => fetch_git(lock.cache(), url, commit),
    }
}

/// The tarball a name stands for: an absolute path as is, otherwise
/// `/usr/src/<name>.tar.{xz,gz,bz2}`.
pub fn tarball_path(name: &str) -> Result<PathBuf, Error> {
    let as_path = Path::new(name);
    if as_path.is_absolute() {
        return if as_path.is_file() {
            Ok(as_path.to_path_buf())
        } else {
            Err(Error::Usage(format!(
                "source tarball {name} does not exist"
            )))
        };
    }
    if name.contains('/') || name.starts_with('.') || name.is_empty() {
        return Err(Error::Usage(format!("bad source tarball name {name:?}")));
    }
    for ext in ["tar.xz", "tar.gz", "tar.bz2", "tar"] {
        let p = Path::new(TARBALL_DIR).join(format!("{name}.{ext}"));
        if p.is_file() {
            return Ok(p);
        }
    }
    let hint = if name.starts_with("linux-source-") {
        format!(" (apt-get install {name})")
    } else {
        String::new()
    };
    Err(Error::Usage(format!(
        "no source tarball {name}.tar.* in {TARBALL_DIR}{hint}"
    )))
}

fn fetch_tarball(cache: &Cache, name: &str) -> Result<Pristine, Error> {
    let tarball = tarball_path(name)?;
    let stem = tarball
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.split(".tar").next().unwrap_or(n).to_string())
        .unwrap_or_else(|| name.to_string());
    let dir = cache.sources_dir().join(&stem);
    let marker = cache.sources_dir().join(format!("{stem}.complete"));
    let meta = std::fs::metadata(&tarball)
        .map_err(|e| Error::io(format!("reading {}", tarball.display()), e))?;
    // The marker ties the unpacked tree to the tarball it came from (size
    // and mtime) and keeps the tarball's sha256, so it is hashed once.
    let stamp = format!(
        "{} {} {}",
        tarball.display(),
        meta.len(),
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
            .unwrap_or(0)
    );
    if let Ok(text) = std::fs::read_to_string(&marker) {
        if let Some((s, sha)) = text.trim().rsplit_once(" sha256:") {
            if s == stamp && dir.join("Makefile").is_file() {
                return Ok(Pristine {
                    dir,
                    source_id: format!("{stem} sha256:{sha}"),
                    kind: SourceKind::Tarball,
                });
            }
        }
    }
    // Unpack into a temporary directory and move the one top-level
    // directory into place, so a half-unpacked tree is never used.
    let _ = std::fs::remove_file(&marker);
    remove_dir_if_exists(&dir)?;
    let tmp = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(cache.sources_dir())
        .map_err(|e| Error::io("creating an unpack directory", e))?;
    Cmd::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp.path())
        .timeout(UNPACK_LIMIT)
        .run()?;
    let mut top = Vec::new();
    for entry in std::fs::read_dir(tmp.path())
        .map_err(|e| Error::io(format!("reading {}", tmp.path().display()), e))?
    {
        top.push(
            entry
                .map_err(|e| Error::io("reading an unpacked tarball", e))?
                .path(),
        );
    }
    let unpacked = match top.as_slice() {
        [one] if one.join("Makefile").is_file() => one.clone(),
        _ if tmp.path().join("Makefile").is_file() => tmp.path().to_path_buf(),
        _ => {
            return Err(Error::Usage(format!(
                "{} does not hold a kernel tree (no top-level Makefile)",
                tarball.display()
            )));
        }
    };
    std::fs::rename(&unpacked, &dir)
        .map_err(|e| Error::io(format!("moving the unpacked tree to {}", dir.display()), e))?;
    let sha = sha256_file(&tarball)?;
    std::fs::write(&marker, format!("{stamp} sha256:{sha}\n"))
        .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
    Ok(Pristine {
        dir,
        source_id: format!("{stem} sha256:{sha}"),
        kind: SourceKind::Tarball,
    })
}

fn fetch_git(cache: &Cache, url: &str, commit: &str) -> Result<Pristine, Error> {
    // The server refused these at submission already; a job file or an
    // older server may still send them, and they become git arguments here.
    git::check_url(url).map_err(|why| Error::Usage(format!("bad git URL {url:?}: {why}")))?;
    git::check_commit(commit)
        .map_err(|why| Error::Usage(format!("bad commit {commit:?}: {why}")))?;
    let mirror = cache
        .git_dir()
        .join(format!("{}.git", &sha256_hex(url.as_bytes())[..16]));
    if !mirror.join("HEAD").is_file() {
        remove_dir_if_exists(&mirror)?;
        let tmp = mirror.with_extension("git-clone");
        remove_dir_if_exists(&tmp)?;
        Cmd::new("git")
            .args(["clone", "--mirror", "--quiet", "--", url])
            .arg(&tmp)
            .timeout(GIT_LIMIT)
            .run()?;
        std::fs::rename(&tmp, &mirror)
            .map_err(|e| Error::io(format!("moving the mirror to {}", mirror.display()), e))?;
    }
    let spec = format!("{commit}^{{commit}}");
    let have = Cmd::new("git")
        .arg("-C")
        .arg(&mirror)
        .args(["rev-parse", "--verify", "--quiet", &spec])
        .capture_stdout()
        .output()?;
    if !have.success() {
        Cmd::new("git")
            .arg("-C")
            .arg(&mirror)
            .args(["fetch", "--quiet", "--prune", "origin"])
            .timeout(GIT_LIMIT)
            .run()?;
    }
    let id = Cmd::new("git")
        .arg("-C")
        .arg(&mirror)
        .args(["rev-parse", "--verify", &spec])
        .stdout_string()
        .map_err(|_| Error::Usage(format!("commit {commit} is not in {url}")))?;
    let commit_time: i64 = Cmd::new("git")
        .arg("-C")
        .arg(&mirror)
        .args(["show", "-s", "--format=%ct", &id])
        .stdout_string()?
        .parse()
        .map_err(|_| Error::Usage(format!("cannot read the commit time of {id}")))?;
    let dir = mirror.with_extension(format!("git-{}", &id[..12]));
    let marker = git_cache::marker(&dir);
    if marker.is_file() && dir.join("Makefile").is_file() {
        git_cache::touch(&dir);
    } else {
        let _ = std::fs::remove_file(&marker);
        remove_dir_if_exists(&dir)?;
        git_cache::prune(&cache.git_dir(), &dir);
        add_worktree(&mirror, &dir, &id, commit_time)?;
        std::fs::write(&marker, format!("{url} {id}\n"))
            .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
    }
    Ok(Pristine {
        dir,
        source_id: id.clone(),
        kind: SourceKind::Git {
            mirror,
            commit: id,
            commit_time,
        },
    })
}

/// Checks `commit` out into `dir` as a detached worktree of `mirror`, with
/// every file's mtime set to `commit_time`.
fn add_worktree(mirror: &Path, dir: &Path, commit: &str, commit_time: i64) -> Result<(), Error> {
    Cmd::new("git")
        .arg("-C")
        .arg(mirror)
        .args(["worktree", "prune"])
        .run()?;
    Cmd::new("git")
        .arg("-C")
        .arg(mirror)
        .args(["worktree", "add", "--detach", "--quiet"])
        .arg(dir)
        .arg(commit)
        .timeout(GIT_LIMIT)
        .run()?;
    set_tree_mtime(dir, commit_time)
}

/// The patched side's source tree: an overlay on the pristine tree, or a
/// fresh copy of it, in the job's scratch directory. Dropping it removes
/// what it put there (and unregisters a git worktree); the pristine tree
/// is never touched.
#[derive(Debug)]
pub struct Tree {
    /// How the tools working on the tree see it.
    pub view: View,
    /// How it is to be patched.
    pub kind: SourceKind,
    /// What the tree holds on disk: the copy, or the overlay's layers.
    stored: PathBuf,
    /// A full copy (not an overlay).
    is_copy: bool,
}

impl Tree {
    /// An overlay on `pristine` whose layers live in `dest` (which must not
    /// exist yet), seen at the pristine tree's path: nothing is copied.
    /// Over a git worktree, git in the overlay works on a copy of the
    /// worktree's index in `dest` (see the module's doc).
    /// Fails where overlayfs cannot be mounted ([`overlay_works`](crate::kernel::fetch::tree_view::overlay_works)).
    pub fn overlay_on(pristine: &Pristine, dest: &Path) -> Result<Tree, Error> {
        let (upper, work) = (dest.join("upper"), dest.join("work"));
        for d in [&upper, &work] {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        let mut view = View::overlay(&pristine.dir, &upper, &work)?;
        if let SourceKind::Git { .. } = pristine.kind {
            // The worktree's HEAD and index live outside the overlay, in
            // the mirror: whatever writes an index here (`git status`
            // refreshing it, an older setlocalversion's `git update-index
            // --refresh`) writes this copy instead.
            let index = private_index(&pristine.dir, dest)?;
            view = view
                .with_env("GIT_INDEX_FILE", &index)
                .with_env("GIT_OPTIONAL_LOCKS", "0");
        }
        Ok(Tree {
            view,
            kind: pristine.kind.clone(),
            stored: dest.to_path_buf(),
            is_copy: false,
        })
    }

    /// Copies `pristine` (without its build trees) to `dest`, which must not
    /// exist yet: `cp -a` of a tarball's tree, a new worktree of a git
    /// commit (the way where overlayfs cannot be mounted). Where bind
    /// mounts work the copy is seen at the pristine tree's path
    /// ([`View::bind`]).
    pub fn copy_of(pristine: &Pristine, dest: &Path) -> Result<Tree, Error> {
        match &pristine.kind {
            SourceKind::Tarball => {
                std::fs::create_dir_all(dest)
                    .map_err(|e| Error::io(format!("creating {}", dest.display()), e))?;
                let mut entries = Vec::new();
                for entry in std::fs::read_dir(&pristine.dir)
                    .map_err(|e| Error::io(format!("reading {}", pristine.dir.display()), e))?
                {
                    let entry = entry.map_err(|e| Error::io("reading a source tree", e))?;
                    let name = entry.file_name();
                    if !name.to_string_lossy().starts_with(BUILD_DIR_PREFIX) {
                        entries.push(entry.path());
                    }
                }
                Cmd::new("cp")
                    .args(["-a", "--reflink=auto"])
                    .args(&entries)
                    .arg(dest)
                    .timeout(COPY_LIMIT)
                    .run()?;
            }
            SourceKind::Git {
                mirror,
                commit,
                commit_time,
            } => add_worktree(mirror, dest, commit, *commit_time)?,
        }
        // Seen at the pristine tree's path where a bind mount works (root,
        // mount namespaces allowed); where it is otherwise.
        let bound = View::bind(dest, &pristine.dir);
        let view = match crate::kernel::fetch::tree_view::mount_works(&bound) {
            Ok(()) => bound,
            Err(_) => View::plain(dest),
        };
        Ok(Tree {
            view,
            kind: pristine.kind.clone(),
            stored: dest.to_path_buf(),
            is_copy: true,
        })
    }

    /// Where a full copy is stored (`None` for an overlay).
    pub fn copy_dir(&self) -> Option<&Path> {
        self.is_copy.then_some(self.stored.as_path())
    }
}

/// A copy, at `dest/index`, of the index of the git worktree `dir`; the
/// copy's path.
fn private_index(dir: &Path, dest: &Path) -> Result<PathBuf, Error> {
    let index = Cmd::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "index"])
        .stdout_string()?;
    let private = dest.join("index");
    std::fs::copy(&index, &private)
        .map_err(|e| Error::io(format!("copying {index} to {}", private.display()), e))?;
    Ok(private)
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let (SourceKind::Git { mirror, .. }, true) = (&self.kind, self.is_copy) {
            let _ = Cmd::new("git")
                .arg("-C")
                .arg(mirror)
                .args(["worktree", "remove", "--force"])
                .arg(&self.stored)
                .run();
            let _ = Cmd::new("git")
                .arg("-C")
                .arg(mirror)
                .args(["worktree", "prune"])
                .run();
        }
        let _ = std::fs::remove_dir_all(&self.stored);
    }
}

/// Copies a directory with `cp -a` (mtimes kept, which the incremental
/// build relies on).
pub fn copy_dir(from: &Path, to: &Path) -> Result<(), Error> {
    Cmd::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .timeout(COPY_LIMIT)
        .run()?;
    Ok(())
}

/// Sets the mtime (and atime) of everything under `dir` except `.git` to
/// `secs` since the epoch.
pub fn set_tree_mtime(dir: &Path, secs: i64) -> Result<(), Error> {
    let t = TimeSpec::new(secs, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| Error::io(format!("reading {}", d.display()), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(format!("reading {}", d.display()), e))?;
            if entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            let file_type = entry
                .file_type()
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
            if file_type.is_dir() {
                stack.push(path.clone());
            }
            utimensat(
                nix::fcntl::AT_FDCWD,
                &path,
                &t,
                &t,
                UtimensatFlags::NoFollowSymlink,
            )
            .map_err(|e| Error::io(format!("setting the mtime of {}", path.display()), e.into()))?;
        }
    }
    Ok(())
}

/// sha256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String, Error> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    Ok(format!("{:x}", hasher.finalize()))
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("removing {}", dir.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::fetch::tree_view::overlay_works;
    use std::os::unix::fs::MetadataExt;

    fn git(dir: &Path, args: &[&str]) -> String {
        Cmd::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.org",
                "-c",
                "init.defaultBranch=master",
            ])
            .args(args)
            .stdout_string()
            .unwrap()
    }

    /// A one-commit repository with a Makefile, standing in for a kernel
    /// tree (fetching and copying do not look further than the Makefile).
    fn small_repo(dir: &Path) -> String {
        std::fs::create_dir_all(dir.join("fs")).unwrap();
        std::fs::write(dir.join("Makefile"), "all:\n").unwrap();
        std::fs::write(dir.join("fs/open.c"), "int open;\n").unwrap();
        git(dir, &["init", "--quiet"]);
        git(dir, &["add", "."]);
        git(dir, &["commit", "--quiet", "-m", "base"]);
        git(dir, &["rev-parse", "HEAD"])
    }

    #[test]
    fn tarball_names_resolve_under_usr_src_and_bad_names_are_refused() {
        assert!(matches!(
            tarball_path("../etc/passwd"),
            Err(Error::Usage(_))
        ));
        assert!(matches!(tarball_path(""), Err(Error::Usage(_))));
        assert!(matches!(
            tarball_path("no-such-source-package"),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn a_tarball_is_unpacked_once_and_copies_leave_build_trees_out() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("linux-tiny");
        std::fs::create_dir_all(src.join("fs")).unwrap();
        std::fs::write(src.join("Makefile"), "all:\n").unwrap();
        std::fs::write(src.join("fs/open.c"), "int open;\n").unwrap();
        let tarball = dir.path().join("linux-tiny.tar.xz");
        Cmd::new("tar")
            .arg("-cJf")
            .arg(&tarball)
            .arg("-C")
            .arg(dir.path())
            .arg("linux-tiny")
            .run()
            .unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let base = BaseSource::Tarball {
            name: tarball.to_str().unwrap().to_string(),
        };
        let pristine = fetch(&lock, &base).unwrap();
        assert_eq!(pristine.dir, cache.sources_dir().join("linux-tiny"));
        let sha = sha256_file(&tarball).unwrap();
        assert_eq!(pristine.source_id, format!("linux-tiny sha256:{sha}"));
        // A second fetch finds it unpacked: a build tree inside survives.
        std::fs::create_dir(pristine.dir.join(".build-0123")).unwrap();
        let again = fetch(&lock, &base).unwrap();
        assert!(again.dir.join(".build-0123").is_dir());

        let scratch = lock.scratch("job").unwrap();
        let copy = Tree::copy_of(&again, &scratch.path().join("linux")).unwrap();
        let copy_dir = copy.copy_dir().unwrap().to_path_buf();
        assert_eq!(copy_dir, scratch.path().join("linux"));
        assert_eq!(
            std::fs::read_to_string(copy_dir.join("fs/open.c")).unwrap(),
            "int open;\n"
        );
        assert!(!copy_dir.join(".build-0123").exists());
        drop(copy);
        assert!(!copy_dir.exists());
    }

    #[test]
    fn a_git_base_becomes_a_worktree_with_commit_time_mtimes() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = dir.path().join("upstream");
        let head = small_repo(&upstream);
        let commit_time: i64 = git(&upstream, &["show", "-s", "--format=%ct", "HEAD"])
            .parse()
            .unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let base = BaseSource::Git {
            url: upstream.to_str().unwrap().to_string(),
            commit: "master".to_string(),
        };
        let pristine = fetch(&lock, &base).unwrap();
        assert_eq!(pristine.source_id, head);
        let mtime = std::fs::metadata(pristine.dir.join("fs/open.c"))
            .unwrap()
            .mtime();
        assert_eq!(mtime, commit_time);

        let scratch = lock.scratch("job").unwrap();
        let copy = Tree::copy_of(&pristine, &scratch.path().join("linux")).unwrap();
        let copy_dir = copy.copy_dir().unwrap().to_path_buf();
        assert!(copy_dir.join("fs/open.c").is_file());
        let SourceKind::Git { mirror, .. } = &pristine.kind else {
            panic!("not a git source");
        };
        let mirror = mirror.clone();
        drop(copy);
        assert!(!copy_dir.exists());
        let worktrees = git(&mirror, &["worktree", "list", "--porcelain"]);
        assert!(
            !worktrees.contains(copy_dir.to_str().unwrap()),
            "worktree still registered:\n{worktrees}"
        );

        // Where overlayfs can be mounted, the patched side is an overlay
        // instead: nothing copied, no worktree added, and git in it works
        // on a copy of the pristine worktree's index.
        let scratch = lock.scratch("overlay").unwrap();
        if let Err(why) = overlay_works(&pristine.dir, scratch.path()) {
            eprintln!("SKIPPED (the overlay): overlayfs not usable here: {why}");
            return;
        }
        let layers = scratch.path().join("linux");
        let overlay = Tree::overlay_on(&pristine, &layers).unwrap();
        assert_eq!(overlay.copy_dir(), None);
        assert_eq!(overlay.view.dir(), pristine.dir);
        let git_path = ["rev-parse", "--path-format=absolute", "--git-path", "index"];
        let seen = overlay
            .view
            .cmd("git")
            .args(git_path)
            .stdout_string()
            .unwrap();
        assert_eq!(Path::new(&seen), layers.join("index"));
        let own = git(&pristine.dir, &git_path);
        assert_ne!(own, seen);
        assert_eq!(std::fs::read(&seen).unwrap(), std::fs::read(&own).unwrap());
        let worktrees_now = git(&mirror, &["worktree", "list", "--porcelain"]);
        assert_eq!(worktrees_now, worktrees);
        drop(overlay);
        assert!(!layers.exists());
        assert!(pristine.dir.join("fs/open.c").is_file());
    }

    #[test]
    fn git_options_as_url_or_commit_are_refused_before_git_runs() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let marker = dir.path().join("pwned");
        for (url, commit) in [
            (
                format!("--upload-pack=touch {}", marker.display()),
                "v6.1".to_string(),
            ),
            (
                "/srv/git/linux.git".to_string(),
                format!("--output={}", marker.display()),
            ),
        ] {
            let base = BaseSource::Git { url, commit };
            assert!(matches!(fetch(&lock, &base), Err(Error::Usage(_))));
        }
        assert!(!marker.exists());
    }

    #[test]
    fn an_unknown_commit_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = dir.path().join("upstream");
        small_repo(&upstream);
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let base = BaseSource::Git {
            url: upstream.to_str().unwrap().to_string(),
            commit: "deadbeefdeadbeef".to_string(),
        };
        assert!(matches!(fetch(&lock, &base), Err(Error::Usage(_))));
    }
}
