//! Build: `make bzImage` with ccache in an out-of-tree build directory, and
//! the cache of built kernels. A kernel is cached under a key made from
//! its source, configuration recipe, compiler and (for the patched side)
//! the patch series' sha256, so a later job with the same base reuses the
//! built base kernel, and a rerun of the same comparison reuses both.
//!
//! Build trees are `<source>/.build-<key>`: a direct subdirectory of the
//! source, which makes Kbuild use relative paths (`srctree := ..`), so
//! ccache hits across copies of a tree. The patched kernel builds on top of
//! the base build tree, seen at the base tree's path (an overlay, or a
//! bind-mounted copy: [`crate::kernel::view`]), so only what the series
//! touches is recompiled. Build stamps (`KBUILD_BUILD_TIMESTAMP`, user, host) are
//! fixed for reproducible objects; `KBUILD_BUILD_VERSION` carries the
//! kernel's key, so `uname -v` in a booted guest proves which kernel runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchperf_common::run::KernelIdentity;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::kernel::cache::CacheLock;
use crate::kernel::config::ConfigRecipe;
use crate::kernel::source::{BUILD_DIR_PREFIX, sha256_hex};
use crate::kernel::view::View;
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

/// A built kernel in the cache (`kernels/<key>/`); `kernel.json` holds
/// this, written last, so a half-stored kernel is never found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltKernel {
    /// The cache key.
    pub key: String,
    /// The source (commit id, or tarball name and sha256).
    pub source: String,
    /// sha256 of the patch series, for the patched side.
    pub patches_sha256: Option<String>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// `gcc --version`'s first line.
    pub compiler: String,
    /// Wall time of the `make bzImage` that built it.
    pub build_seconds: f64,
    /// Size of `bzImage`.
    pub image_bytes: u64,
    /// Where it is stored.
    #[serde(skip)]
    pub dir: PathBuf,
}

impl BuiltKernel {
    /// The bzImage to boot.
    pub fn image(&self) -> PathBuf {
        self.dir.join("bzImage")
    }

    /// The final `.config`.
    pub fn config(&self) -> PathBuf {
        self.dir.join("config")
    }

    /// `KBUILD_BUILD_VERSION` of this kernel: the key's first 12 hex
    /// digits, so `uname -v` (`#<that> SMP …`) names the kernel.
    pub fn build_version(&self) -> &str {
        &self.key[..12]
    }

    /// The identity of this kernel as booted, given `uname -r`/`uname -v`
    /// from inside the guest.
    pub fn identity(&self, release: &str, version: &str) -> KernelIdentity {
        KernelIdentity {
            release: release.to_string(),
            source: self.source.clone(),
            patches_sha256: self.patches_sha256.clone(),
            config_sha256: self.config_sha256.clone(),
            compiler: self.compiler.clone(),
            version: version.to_string(),
        }
    }

    /// Looks a kernel up in the cache.
    pub fn find(lock: &CacheLock, key: &str) -> Option<BuiltKernel> {
        let dir = lock.cache().kernels_dir().join(key);
        let text = std::fs::read_to_string(dir.join("kernel.json")).ok()?;
        let mut k: BuiltKernel = serde_json::from_str(&text).ok()?;
        if !dir.join("bzImage").is_file() {
            return None;
        }
        k.dir = dir;
        Some(k)
    }

    /// Stores the image and `.config` of a finished build under
    /// `kernels/<key>/`.
    pub fn store(mut self, lock: &CacheLock, make: &Make) -> Result<BuiltKernel, Error> {
        let dir = lock.cache().kernels_dir().join(&self.key);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        make.copy_out(IMAGE_PATH, &dir.join("bzImage"))?;
        make.copy_out(".config", &dir.join("config"))?;
        self.image_bytes = std::fs::metadata(dir.join("bzImage"))
            .map_err(|e| Error::io("reading the stored bzImage", e))?
            .len();
        let json = serde_json::to_string_pretty(&self).map_err(Error::json)?;
        let tmp = dir.join("kernel.json.tmp");
        std::fs::write(&tmp, json)
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, dir.join("kernel.json"))
            .map_err(|e| Error::io("storing kernel.json", e))?;
        self.dir = dir;
        Ok(self)
    }
}

/// Cache key of the base kernel: source, configuration recipe, compiler.
pub fn base_key(source_id: &str, recipe: &ConfigRecipe, toolchain: &Toolchain) -> String {
    let material = format!(
        "patchperf kernel v1\nsource {source_id}\narch {ARCH}\ncompiler {}\nconfig\n{}",
        toolchain.compiler,
        recipe.fragment()
    );
    sha256_hex(material.as_bytes())
}

/// Cache key of the patched kernel: the base's key and the series.
pub fn patched_key(base_key: &str, patches_sha256: &str) -> String {
    sha256_hex(format!("{base_key}\npatches {patches_sha256}").as_bytes())
}

/// Name of the build tree of the base kernel with this key, inside the
/// source tree (and copied into patched trees under the same name).
pub fn build_dir_name(base_key: &str) -> String {
    format!("{BUILD_DIR_PREFIX}{}", &base_key[..12])
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
mod tests {
    use super::*;

    fn toolchain(compiler: &str) -> Toolchain {
        Toolchain {
            compiler: compiler.into(),
            jobs: 2,
            ccache: true,
        }
    }

    #[test]
    fn the_kernel_key_changes_with_source_config_compiler_and_patches() {
        let plain = ConfigRecipe::new(None).unwrap();
        let hz = ConfigRecipe::new(Some("CONFIG_HZ_1000=y".into())).unwrap();
        let gcc12 = toolchain("gcc (Debian 12.2.0-14) 12.2.0");
        let gcc13 = toolchain("gcc (Debian 13.2.0-1) 13.2.0");
        let k = base_key("linux-source-6.1 sha256:ab", &plain, &gcc12);
        assert_eq!(k.len(), 64);
        assert_eq!(k, base_key("linux-source-6.1 sha256:ab", &plain, &gcc12));
        assert_ne!(k, base_key("linux-source-6.1 sha256:cd", &plain, &gcc12));
        assert_ne!(k, base_key("linux-source-6.1 sha256:ab", &hz, &gcc12));
        assert_ne!(k, base_key("linux-source-6.1 sha256:ab", &plain, &gcc13));
        // The job count does not change what is built.
        let mut gcc12_8 = gcc12.clone();
        gcc12_8.jobs = 8;
        assert_eq!(k, base_key("linux-source-6.1 sha256:ab", &plain, &gcc12_8));
        assert_ne!(patched_key(&k, "p1"), patched_key(&k, "p2"));
        assert_eq!(build_dir_name(&k), format!(".build-{}", &k[..12]));
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
