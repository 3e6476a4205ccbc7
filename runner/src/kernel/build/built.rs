//! Built kernels: the cache of them (`kernels/<key>/`) and their keys. A
//! kernel is cached under a key made from its source, configuration
//! recipe, compiler and (for the patched side) the patch series' sha256, so
//! a later job with the same base reuses the built base kernel, and a rerun
//! of the same comparison reuses both. The base kernel's build tree is
//! `<source>/.build-<key>` ([`build_dir_name`]); the patched kernel builds
//! on top of it, so only what the series touches is recompiled.

use std::path::PathBuf;

use patchperf_common::digest::sha256_hex;
use patchperf_common::run::KernelIdentity;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::kernel::build::make::{ARCH, IMAGE_PATH, Make, Toolchain};
use crate::kernel::cache::CacheLock;
use crate::kernel::configure::config::ConfigRecipe;
use crate::kernel::fetch::source::BUILD_DIR_PREFIX;

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
    /// How many patches the series holds, for a patched kernel (absent in
    /// kernels cached before it was recorded).
    #[serde(default)]
    pub patches: Option<u32>,
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

    /// The identity of this kernel as booted, given `uname -r`/`uname -v`
    /// from inside the guest.
    pub fn identity(&self, release: &str, version: &str) -> KernelIdentity {
        KernelIdentity {
            release: release.to_string(),
            source: self.source.clone(),
            patches_sha256: self.patches_sha256.clone(),
            patches: self.patches,
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

    /// The one way a kernel enters the cache: stores the image and
    /// `.config` of the `finished` build `make` ran, then its record,
    /// under `kernels/<key>/`.
    pub fn store(
        lock: &CacheLock,
        make: &Make,
        finished: Finished<'_>,
    ) -> Result<BuiltKernel, Error> {
        let dir = lock.cache().kernels_dir().join(finished.key);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        make.copy_out(IMAGE_PATH, &dir.join("bzImage"))?;
        make.copy_out(".config", &dir.join("config"))?;
        let image_bytes = std::fs::metadata(dir.join("bzImage"))
            .map_err(|e| Error::io("reading the stored bzImage", e))?
            .len();
        let kernel = BuiltKernel {
            key: finished.key.to_string(),
            source: finished.source.to_string(),
            patches_sha256: finished.patches_sha256.map(str::to_string),
            patches: finished.patches,
            config_sha256: finished.config_sha256,
            compiler: make.toolchain().compiler.clone(),
            build_seconds: finished.build_seconds,
            image_bytes,
            dir,
        };
        let json = serde_json::to_string_pretty(&kernel).map_err(Error::json)?;
        let tmp = kernel.dir.join("kernel.json.tmp");
        std::fs::write(&tmp, json)
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, kernel.dir.join("kernel.json"))
            .map_err(|e| Error::io("storing kernel.json", e))?;
        Ok(kernel)
    }
}

/// A build `make bzImage` just finished, as [`BuiltKernel::store`] records it.
#[derive(Debug)]
pub struct Finished<'a> {
    /// The cache key.
    pub key: &'a str,
    /// The source (commit id, or tarball name and sha256).
    pub source: &'a str,
    /// sha256 of the patch series, for the patched side.
    pub patches_sha256: Option<&'a str>,
    /// How many patches the series holds, for a patched kernel.
    pub patches: Option<u32>,
    /// sha256 of the final `.config`.
    pub config_sha256: String,
    /// Wall time of the `make bzImage`.
    pub build_seconds: f64,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::build::make::tests::toolchain;

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
}
