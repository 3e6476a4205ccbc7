//! The directory the workloads make their files in. It should be a tmpfs,
//! so that no disk or journal shows up in the numbers: as root a private
//! tmpfs mounted in a private mount namespace (nobody else sees it, and it
//! vanishes with the process even on SIGKILL), else a directory in
//! /dev/shm, else in $TMPDIR; or a directory inside `--scratch DIR`.
//! Everything is removed when the [`Scratch`] is dropped.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use crate::Error;

/// tmpfs's `f_type` in statfs(2).
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Where the scratch directory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScratchKind {
    /// A tmpfs of our own, mounted in a private mount namespace.
    PrivateTmpfs,
    /// Inside the directory the user gave.
    Given,
    /// Inside /dev/shm.
    DevShm,
    /// Inside $TMPDIR (or /tmp).
    TmpDir,
}

impl ScratchKind {
    /// A few words for the run's header line.
    pub fn describe(self) -> &'static str {
        match self {
            ScratchKind::PrivateTmpfs => "private tmpfs",
            ScratchKind::Given => "given directory",
            ScratchKind::DevShm => "/dev/shm",
            ScratchKind::TmpDir => "$TMPDIR",
        }
    }
}

/// A scratch directory, removed (and unmounted) on drop.
#[derive(Debug)]
pub struct Scratch {
    kind: ScratchKind,
    mounted: bool,
    dir: tempfile::TempDir,
}

impl Scratch {
    /// Makes a scratch directory: inside `given` if set (an error there is
    /// the user's: [`Error::Usage`]), else the best place this machine has.
    pub fn create(given: Option<&Path>) -> Result<Scratch, Error> {
        if let Some(given) = given {
            let dir = make_dir_in(given).map_err(|e| {
                Error::Usage(format!(
                    "scratch directory {}: cannot create files there: {e}",
                    given.display()
                ))
            })?;
            return Ok(Scratch {
                kind: ScratchKind::Given,
                mounted: false,
                dir,
            });
        }
        let (kind, dir) = match make_dir_in(Path::new("/dev/shm")) {
            Ok(dir) => (ScratchKind::DevShm, dir),
            Err(_) => {
                let tmp = std::env::temp_dir();
                let dir = make_dir_in(&tmp).map_err(|e| {
                    Error::Usage(format!(
                        "no scratch directory: neither /dev/shm nor {} is writable: {e}",
                        tmp.display()
                    ))
                })?;
                (ScratchKind::TmpDir, dir)
            }
        };
        if private_namespace() && mount_tmpfs(dir.path()).is_ok() {
            return Ok(Scratch {
                kind: ScratchKind::PrivateTmpfs,
                mounted: true,
                dir,
            });
        }
        Ok(Scratch {
            kind,
            mounted: false,
            dir,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where it lives.
    pub fn kind(&self) -> ScratchKind {
        self.kind
    }

    /// Whether the directory is on a tmpfs (a given directory may not be).
    pub fn is_tmpfs(&self) -> bool {
        is_tmpfs(self.path())
    }

    fn unmount(&mut self) {
        if self.mounted {
            self.mounted = false;
            if let Ok(c) = CString::new(self.dir.path().as_os_str().as_bytes()) {
                // SAFETY: `c` is a valid path string; detaching our own
                // private mount touches no memory of ours.
                unsafe {
                    libc::umount2(c.as_ptr(), libc::MNT_DETACH);
                }
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // The TempDir field is dropped (removed) after this runs.
        self.unmount();
    }
}

fn make_dir_in(parent: &Path) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("patchperf-bench.")
        .tempdir_in(parent)
}

/// Moves this process into a mount namespace of its own, once, so that
/// our tmpfs is invisible to others and dies with us. Only as root, and
/// only while the process is single-threaded (unshare refuses otherwise).
fn private_namespace() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return false;
        }
        // SAFETY: unshare only changes this process's namespaces.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            return false;
        }
        // Stop our mounts from propagating back to the host's namespace.
        // SAFETY: static strings for the path; null source/fstype/data are
        // allowed when changing propagation.
        let ret = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        ret == 0
    })
}

fn mount_tmpfs(dir: &Path) -> io::Result<()> {
    let target = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: all arguments are valid NUL-terminated strings that outlive
    // the call.
    let ret = unsafe {
        libc::mount(
            c"patchperf-bench".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0700,size=64m".as_ptr().cast(),
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn is_tmpfs(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain integers; zeroed is a valid value.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path and `buf` a writable statfs.
    let ret = unsafe { libc::statfs(c.as_ptr(), &mut buf) };
    ret == 0 && buf.f_type as i64 == TMPFS_MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_directory_gets_a_subdirectory_that_is_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(Some(parent.path())).unwrap();
        assert_eq!(scratch.kind(), ScratchKind::Given);
        let inner = scratch.path().to_path_buf();
        assert!(inner.starts_with(parent.path()));
        std::fs::write(inner.join("f"), b"x").unwrap();
        drop(scratch);
        assert!(!inner.exists());
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_unwritable_directory_is_a_usage_error() {
        let err = Scratch::create(Some(Path::new("/proc/self"))).unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{err}");
        assert!(err.to_string().contains("/proc/self"), "{err}");
    }

    #[test]
    fn the_default_scratch_is_on_tmpfs_when_dev_shm_is() {
        let scratch = Scratch::create(None).unwrap();
        if is_tmpfs(Path::new("/dev/shm")) {
            assert!(scratch.is_tmpfs());
        }
    }
}
