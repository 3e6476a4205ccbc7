//! Kbuild: how `make` runs on a source tree — out of tree
//! (`O=.build-<key>`, a direct subdirectory of the source, which makes
//! Kbuild use relative paths, `srctree := ..`, so ccache hits across copies
//! of a tree), with ccache and fixed build stamps (`KBUILD_BUILD_TIMESTAMP`,
//! user, host) for reproducible objects; `KBUILD_BUILD_VERSION` carries the
//! kernel's key, so `uname -v` in a booted guest proves which kernel runs.
//! The tree is seen through its [`View`] (an overlay or a bind-mounted copy
//! for a patched tree: [`crate::kernel::fetch::tree_view`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::Error;
use crate::kernel::fetch::tree_view::View;
use crate::proc::{Cmd, Event, Flow};

/// Kernel architecture built (the host's; QEMU emulates the same).
pub const ARCH: &str = "x86_64";

/// The image `make bzImage` leaves in the build tree.
pub const IMAGE_PATH: &str = "arch/x86/boot/bzImage";

/// A cold build takes 10 min on 2 cores here; this leaves room for slower
/// machines without letting a wedged compiler hold a runner forever.
pub const BUILD_LIMIT: Duration = Duration::from_secs(3 * 60 * 60);

const CONFIG_LIMIT: Duration = Duration::from_secs(10 * 60);

/// Fixed build stamps so ccache hits and rebuilt objects match.
const BUILD_TIMESTAMP: &str = "Thu Jan  1 00:00:00 UTC 1970";

/// The compiler and parallelism kernels are built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// `gcc --version`'s first line, part of every kernel's identity.
    pub compiler: String,
    /// `make -j`.
    pub jobs: usize,
    /// Wrap the compiler in ccache (when it is installed).
    pub ccache: bool,
}

impl Toolchain {
    /// gcc and ccache from `PATH`, one make job per CPU.
    pub fn detect() -> Result<Toolchain, Error> {
        let version = Cmd::new("gcc").arg("--version").stdout_string()?;
        let compiler = version.lines().next().unwrap_or("gcc").trim().to_string();
        let ccache = Cmd::new("ccache")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.success());
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(Toolchain {
            compiler,
            jobs,
            ccache,
        })
    }
}

/// How to run Kbuild on one tree: `make O=.build-<key> ARCH=… CC=…` in the
/// tree's top directory, as its [`View`] shows it.
#[derive(Debug, Clone)]
pub struct Make {
    view: View,
    build_dir_name: String,
    toolchain: Toolchain,
    ccache_dir: PathBuf,
    version: String,
    limit: Duration,
}

impl Make {
    /// Make for the tree `view` shows, building into `<tree>/<build_dir_name>`,
    /// with `version` as `KBUILD_BUILD_VERSION` (shows in `uname -v`).
    pub fn new(
        view: &View,
        build_dir_name: &str,
        toolchain: &Toolchain,
        ccache_dir: &Path,
        version: &str,
    ) -> Make {
        Make {
            view: view.clone(),
            build_dir_name: build_dir_name.to_string(),
            toolchain: toolchain.clone(),
            ccache_dir: ccache_dir.to_path_buf(),
            version: version.to_string(),
            limit: CONFIG_LIMIT,
        }
    }

    /// The compiler and parallelism it builds with.
    pub fn toolchain(&self) -> &Toolchain {
        &self.toolchain
    }

    /// The build tree as make sees it (a mounted view's is not readable
    /// there from the host: use [`Make::read`] and [`Make::copy_out`]).
    pub fn build_dir(&self) -> PathBuf {
        self.view.dir().join(&self.build_dir_name)
    }

    /// The build tree's file `rel`.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        self.view.read(&format!("{}/{rel}", self.build_dir_name))
    }

    /// Writes the build tree's file `rel`.
    pub fn write(&self, rel: &str, contents: &[u8]) -> Result<(), Error> {
        self.view
            .write(&format!("{}/{rel}", self.build_dir_name), contents)
    }

    /// Whether the build tree has `rel`.
    pub fn has(&self, rel: &str) -> bool {
        self.view.exists(&format!("{}/{rel}", self.build_dir_name))
    }

    /// Copies the build tree's file `rel` to `dest` on the host.
    pub fn copy_out(&self, rel: &str, dest: &Path) -> Result<(), Error> {
        self.view
            .copy_out(&format!("{}/{rel}", self.build_dir_name), dest)
    }

    /// `program` run in the tree's top directory as make sees the tree.
    pub fn tree_cmd(&self, program: &str) -> Cmd {
        self.view.cmd(program)
    }

    /// A `make` command line for `targets`.
    pub fn cmd(&self, targets: &[&str]) -> Cmd {
        let cc = if self.toolchain.ccache {
            "ccache gcc"
        } else {
            "gcc"
        };
        self.view
            .cmd("make")
            .arg(format!("O={}", self.build_dir_name))
            .arg(format!("ARCH={ARCH}"))
            .arg(format!("CC={cc}"))
            .arg(format!("HOSTCC={cc}"))
            .arg(format!("-j{}", self.toolchain.jobs))
            .args(targets)
            .env("CCACHE_DIR", &self.ccache_dir)
            // Build trees differ only in their location; without -g nothing
            // location-dependent reaches the objects.
            .env("CCACHE_NOHASHDIR", "1")
            // A miss compiles once, with the dependency list Kbuild asks
            // gcc for (-Wp,-MMD), instead of preprocessing first to hash:
            // a cold base build 254 s → 200 s on 2 CPUs (190 s without
            // ccache), and a fresh tree still builds from the cache
            // (BENCHMARKS.md, "Kernel builds and boots").
            .env("CCACHE_DEPEND", "1")
            .env("KBUILD_BUILD_TIMESTAMP", BUILD_TIMESTAMP)
            .env("KBUILD_BUILD_USER", "patchperf")
            .env("KBUILD_BUILD_HOST", "patchperf")
            .env("KBUILD_BUILD_VERSION", &self.version)
            .timeout(self.limit)
    }

    /// `make bzImage`, each output line passed to `on_line` (which may stop
    /// the build); returns the wall time.
    pub fn bzimage(&self, on_line: &mut dyn FnMut(Event<'_>) -> Flow) -> Result<Duration, Error> {
        let mut make = self.clone();
        make.limit = BUILD_LIMIT;
        let cmd = make.cmd(&["bzImage"]);
        let started = Instant::now();
        let out = cmd.watch(on_line)?;
        if out.stopped {
            return Err(Error::Interrupted);
        }
        if !out.success() {
            return Err(Error::ProcessFailed {
                command: cmd.display(),
                status: out
                    .status
                    .map(crate::proc::describe_status)
                    .unwrap_or_default(),
                tail: out.tail.to_string(),
            });
        }
        Ok(started.elapsed())
    }
}

/// The first compiler or linker error in a build log, for the failure's
/// one-line detail.
pub fn first_error(log: &str) -> Option<&str> {
    log.lines().find(|l| {
        l.contains(": error:")
            || l.contains("undefined reference")
            || l.starts_with("make") && l.contains("Error")
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A toolchain as `Toolchain::detect` would find it, for tests.
    pub(crate) fn toolchain(compiler: &str) -> Toolchain {
        Toolchain {
            compiler: compiler.into(),
            jobs: 2,
            ccache: true,
        }
    }

    #[test]
    fn make_command_lines_build_out_of_tree_with_ccache_and_fixed_stamps() {
        let make = Make::new(
            &View::plain(Path::new("/c/sources/linux")),
            ".build-0123456789ab",
            &toolchain("gcc"),
            Path::new("/c/ccache"),
            "0123456789ab",
        );
        assert_eq!(
            make.cmd(&["olddefconfig"]).display(),
            "make O=.build-0123456789ab ARCH=x86_64 \"CC=ccache gcc\" \"HOSTCC=ccache gcc\" -j2 olddefconfig"
        );
        assert_eq!(
            make.build_dir(),
            Path::new("/c/sources/linux/.build-0123456789ab")
        );
        let cmd = make.cmd(&["bzImage"]);
        assert_eq!(cmd.env_value("CCACHE_DIR"), Some("/c/ccache".as_ref()));
        assert_eq!(cmd.env_value("CCACHE_DEPEND"), Some("1".as_ref()));
        assert_eq!(cmd.env_value("CCACHE_NOHASHDIR"), Some("1".as_ref()));
    }

    #[test]
    fn the_first_compiler_error_is_found_in_a_build_log() {
        let log = "  CC      fs/open.o\n../fs/open.c:1202:9: error: 'fd' undeclared (first use in this function)\n\
                   make[3]: *** [../scripts/Makefile.build:250: fs/open.o] Error 1\n";
        assert_eq!(
            first_error(log),
            Some("../fs/open.c:1202:9: error: 'fd' undeclared (first use in this function)")
        );
    }
}
