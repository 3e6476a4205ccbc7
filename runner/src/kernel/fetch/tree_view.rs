//! A source tree's view: how the tools of a job (patch, git, make, cp) see it. The patched
//! kernel is built incrementally on top of the base kernel's build tree,
//! and Kbuild only reuses that tree's objects when every path it recorded
//! (objtool, fixdep, `.cmd` files) still holds, so the patched tree must
//! appear at the base tree's own path. Three ways:
//!
//! - [`View::plain`]: the tree where it is (the pristine base tree, a git
//!   worktree);
//! - [`View::overlay`]: an overlayfs whose lower layer is the pristine tree
//!   (with the base build tree in it) and whose upper layer, in the job's
//!   scratch directory, receives what the series and the build write.
//!   Nothing is copied: the series touches a few files and the build
//!   rewrites a few objects and the images. A git worktree's `.git` link
//!   is seen in the overlay too, and its target (HEAD, index) is outside
//!   it: git commands in such an overlay get a private index through the
//!   view's environment ([`View::with_env`], set by
//!   [`Tree::overlay_on`](crate::kernel::fetch::source::Tree::overlay_on));
//! - [`View::bind`]: a full copy bind-mounted at the base tree's path, where
//!   overlayfs cannot be mounted.
//!
//! The mounts live in a private mount namespace of each command
//! (`unshare --mount`), so they end with the command: nothing stays mounted
//! when a job ends or dies, and the host never sees the patched tree at the
//! base tree's path. Both need root; without it the copy is used where it
//! is and only the files the series touched and what depends on them are
//! rebuilt, plus whatever objtool recorded by absolute path.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Error;
use crate::proc::Cmd;

const PROBE_LIMIT: Duration = Duration::from_secs(60);

/// A source tree as the tools working on it see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Where the tools see the tree's top directory.
    seen_at: PathBuf,
    layer: Layer,
    /// Set for every command run through the view.
    env: Vec<(OsString, OsString)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Layer {
    /// The tree is at `seen_at`.
    Plain,
    /// A copy at `copy`, bind-mounted at `seen_at`.
    Bind { copy: PathBuf },
    /// `seen_at` itself as the lower layer, `upper` and `work` on top.
    Overlay { upper: PathBuf, work: PathBuf },
}

impl View {
    /// The tree at `dir`, as it is.
    pub fn plain(dir: &Path) -> View {
        View {
            seen_at: dir.to_path_buf(),
            layer: Layer::Plain,
            env: Vec::new(),
        }
    }

    /// The copy at `copy`, seen at `at` (the tree it was copied from).
    pub fn bind(copy: &Path, at: &Path) -> View {
        View {
            seen_at: at.to_path_buf(),
            layer: Layer::Bind {
                copy: copy.to_path_buf(),
            },
            env: Vec::new(),
        }
    }

    /// `lower` with the layer in `upper` (and overlayfs's `work`, on the same
    /// file system) on top, seen at `lower`'s own path. Both directories
    /// must exist; `upper` starts empty for a fresh tree and keeps the
    /// patched tree's changes between commands.
    pub fn overlay(lower: &Path, upper: &Path, work: &Path) -> Result<View, Error> {
        for p in [lower, upper, work] {
            let s = p.to_string_lossy();
            // Overlayfs separates its options with commas and lower layers
            // with colons.
            if !p.is_absolute() || s.contains([',', ':', '\\', '\n']) {
                return Err(Error::Usage(format!(
                    "{s}: overlayfs needs absolute paths without ',', ':' or '\\'"
                )));
            }
        }
        Ok(View {
            seen_at: lower.to_path_buf(),
            layer: Layer::Overlay {
                upper: upper.to_path_buf(),
                work: work.to_path_buf(),
            },
            env: Vec::new(),
        })
    }

    /// The same view, with `key=value` in the environment of every command
    /// run through it (make and what it runs included).
    pub fn with_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> View {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// The tree's top directory as the tools see it.
    pub fn dir(&self) -> &Path {
        &self.seen_at
    }

    /// Whether the tools see the tree somewhere else than where it is
    /// stored, so the host cannot read it at [`View::dir`].
    pub fn is_mounted(&self) -> bool {
        self.layer != Layer::Plain
    }

    /// `program` to be run in the tree's top directory, with the tree
    /// mounted where the tools see it; append its arguments.
    pub fn cmd(&self, program: impl AsRef<OsStr>) -> Cmd {
        let unshare = || {
            Cmd::new("unshare")
                .args(["--mount", "--propagation", "private", "sh", "-ec"])
                .current_dir("/")
        };
        let cmd = match &self.layer {
            Layer::Plain => Cmd::new(program).current_dir(&self.seen_at),
            Layer::Bind { copy } => unshare()
                .arg(r#"mount --bind "$1" "$2"; cd "$2"; shift 2; exec "$@""#)
                .arg("sh")
                .arg(copy)
                .arg(&self.seen_at)
                .arg(program),
            Layer::Overlay { upper, work } => unshare()
                .arg(
                    r#"mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$1"; cd "$1"; shift 3; exec "$@""#,
                )
                .arg("sh")
                .arg(&self.seen_at)
                .arg(upper)
                .arg(work)
                .arg(program),
        };
        self.env
            .iter()
            .fold(cmd, |cmd, (key, value)| cmd.env(key, value))
    }

    /// Copies the tree's file `rel` (relative to its top) to `dest` on the
    /// host.
    pub fn copy_out(&self, rel: &str, dest: &Path) -> Result<(), Error> {
        match &self.layer {
            Layer::Plain => {
                let from = self.seen_at.join(rel);
                std::fs::copy(&from, dest)
                    .map(|_| ())
                    .map_err(|e| Error::io(format!("copying {}", from.display()), e))
            }
            _ => self
                .cmd("cp")
                .arg("--")
                .arg(rel)
                .arg(dest)
                .run()
                .map(|_| ()),
        }
    }

    /// The contents of the tree's file `rel`.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        match &self.layer {
            Layer::Plain => {
                let path = self.seen_at.join(rel);
                std::fs::read(&path)
                    .map_err(|e| Error::io(format!("reading {}", path.display()), e))
            }
            _ => {
                let tmp = tempfile::NamedTempFile::new()
                    .map_err(|e| Error::io("creating a temporary file", e))?;
                self.copy_out(rel, tmp.path())?;
                std::fs::read(tmp.path()).map_err(|e| Error::io(format!("reading {rel}"), e))
            }
        }
    }

    /// The tree's file `rel` as text.
    pub fn read_to_string(&self, rel: &str) -> Result<String, Error> {
        String::from_utf8(self.read(rel)?)
            .map_err(|_| Error::Usage(format!("{rel} in {} is not UTF-8", self.dir().display())))
    }

    /// Writes `contents` to the tree's file `rel`.
    pub fn write(&self, rel: &str, contents: &[u8]) -> Result<(), Error> {
        match &self.layer {
            Layer::Plain => {
                let path = self.seen_at.join(rel);
                std::fs::write(&path, contents)
                    .map_err(|e| Error::io(format!("writing {}", path.display()), e))
            }
            _ => {
                let tmp = tempfile::NamedTempFile::new()
                    .map_err(|e| Error::io("creating a temporary file", e))?;
                std::fs::write(tmp.path(), contents)
                    .map_err(|e| Error::io("writing a temporary file", e))?;
                self.cmd("cp")
                    .arg("--")
                    .arg(tmp.path())
                    .arg(rel)
                    .run()
                    .map(|_| ())
            }
        }
    }

    /// Whether the tree has a file (or directory) `rel`.
    pub fn exists(&self, rel: &str) -> bool {
        match &self.layer {
            Layer::Plain => self.seen_at.join(rel).exists(),
            _ => self
                .cmd("test")
                .args(["-e", rel])
                .output()
                .is_ok_and(|o| o.success()),
        }
    }
}

/// Whether the tools can see the tree through `view` here (its mounts
/// need root and a mount namespace of their own); `Err` says why not.
pub fn mount_works(view: &View) -> Result<(), String> {
    if !view.is_mounted() {
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        return Err("mounting needs root".to_string());
    }
    run_probe(view.cmd("true"))
}

/// Runs a probe command; `Err` is what it printed when it failed (the
/// mount's own complaint), else the error.
fn run_probe(cmd: Cmd) -> Result<(), String> {
    cmd.timeout(PROBE_LIMIT)
        .run()
        .map(|_| ())
        .map_err(|e| match e {
            Error::ProcessFailed { tail, .. } => tail.trim().to_string(),
            other => other.to_string(),
        })
}

/// Whether an overlay with `lower` as its lower layer can be mounted here
/// with its upper layer under `scratch` (root, overlayfs in the kernel, an
/// upper file system that supports it): tried with a real mount. `Err`
/// says why not.
pub fn overlay_works(lower: &Path, scratch: &Path) -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("mounting needs root".to_string());
    }
    let probe = tempfile::Builder::new()
        .prefix("overlay-probe-")
        .tempdir_in(scratch)
        .map_err(|e| format!("creating a probe directory: {e}"))?;
    let (upper, work) = (probe.path().join("upper"), probe.path().join("work"));
    for d in [&upper, &work] {
        std::fs::create_dir(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    let view = View::overlay(lower, &upper, &work).map_err(|e| e.to_string())?;
    // Write through the overlay, so an upper file system that cannot hold
    // overlayfs's metadata fails here rather than in the middle of a build.
    run_probe(
        view.cmd("sh")
            .args(["-ec", "touch .patchperf-overlay-probe && test -f Makefile"]),
    )?;
    if lower.join(".patchperf-overlay-probe").exists() {
        return Err("the probe's write reached the lower layer".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_and_bind_commands_mount_in_their_own_namespace() {
        let v = View::overlay(
            Path::new("/c/sources/linux"),
            Path::new("/c/work/j/upper"),
            Path::new("/c/work/j/work"),
        )
        .unwrap();
        assert_eq!(v.dir(), Path::new("/c/sources/linux"));
        assert_eq!(
            v.cmd("make").arg("-j2").display(),
            "unshare --mount --propagation private sh -ec \
             \"mount -t overlay overlay -o \\\"lowerdir=$1,upperdir=$2,workdir=$3\\\" \\\"$1\\\"; cd \\\"$1\\\"; shift 3; exec \\\"$@\\\"\" \
             sh /c/sources/linux /c/work/j/upper /c/work/j/work make -j2"
        );
        let b = View::bind(Path::new("/c/work/j/linux"), Path::new("/c/sources/linux"));
        assert_eq!(b.dir(), Path::new("/c/sources/linux"));
        assert!(
            b.cmd("make")
                .display()
                .ends_with("sh /c/work/j/linux /c/sources/linux make")
        );
        assert!(!View::plain(Path::new("/c/sources/linux")).is_mounted());
    }

    #[test]
    fn a_views_environment_reaches_every_command_run_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let v = View::plain(dir.path()).with_env("GIT_INDEX_FILE", "/c/work/j/index");
        let out = v.cmd("sh").args(["-c", "echo \"$GIT_INDEX_FILE\""]);
        assert_eq!(out.stdout_string().unwrap(), "/c/work/j/index");
    }

    #[test]
    fn paths_overlayfs_cannot_carry_are_refused() {
        let ok = Path::new("/c/u");
        assert!(View::overlay(Path::new("/c/a,b"), ok, ok).is_err());
        assert!(View::overlay(Path::new("/c/a:b"), ok, ok).is_err());
        assert!(View::overlay(Path::new("relative"), ok, ok).is_err());
    }

    /// The real thing where it can run (root, overlayfs): writes land in
    /// the upper layer, the lower tree stays as it was.
    #[test]
    fn writes_through_an_overlay_stay_in_the_upper_layer() {
        let dir = tempfile::tempdir().unwrap();
        let lower = dir.path().join("linux");
        std::fs::create_dir_all(lower.join("fs")).unwrap();
        std::fs::write(lower.join("Makefile"), "all:\n").unwrap();
        std::fs::write(lower.join("fs/open.c"), "int open;\n").unwrap();
        if let Err(why) = overlay_works(&lower, dir.path()) {
            eprintln!("SKIPPED: overlayfs not usable here: {why}");
            return;
        }
        let (upper, work) = (dir.path().join("upper"), dir.path().join("work"));
        std::fs::create_dir(&upper).unwrap();
        std::fs::create_dir(&work).unwrap();
        let v = View::overlay(&lower, &upper, &work).unwrap();
        v.write("fs/open.c", b"int open_fast;\n").unwrap();
        assert_eq!(v.read_to_string("fs/open.c").unwrap(), "int open_fast;\n");
        assert_eq!(v.read_to_string("Makefile").unwrap(), "all:\n");
        assert!(v.exists("fs/open.c") && !v.exists("fs/close.c"));
        assert_eq!(
            std::fs::read_to_string(lower.join("fs/open.c")).unwrap(),
            "int open;\n"
        );
        assert_eq!(
            std::fs::read_to_string(upper.join("fs/open.c")).unwrap(),
            "int open_fast;\n"
        );
        assert!(!upper.join("Makefile").exists());
        let out = dir.path().join("open.c");
        v.copy_out("fs/open.c", &out).unwrap();
        assert_eq!(std::fs::read_to_string(out).unwrap(), "int open_fast;\n");
    }
}
