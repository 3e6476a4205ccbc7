//! Shared by the seed-patch tests (`seed_patches.rs`, `seed_patches_compile.rs`):
//! the ported patches of each release (`examples/patches/` for Debian's
//! linux-source-6.1, `examples/patches-6.12/` for linux-source-6.12), read
//! as mbox files, and the tree they are ported to, unpacked once under
//! `target/tmp/` in a directory named by the tarball's sha256 so that a new
//! tarball never reuses a stale tree.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use patchperf_runner::proc::Cmd;

/// A Debian kernel source package and the seeds ported to it.
#[derive(Debug, Clone, Copy)]
pub struct Release {
    /// The package (`linux-source-6.1`).
    pub package: &'static str,
    /// The folder of its ports, under `examples/`.
    pub folder: &'static str,
    /// The seeds ported to it, by number.
    pub seeds: &'static [&'static str],
    /// The environment variable naming another tarball of it.
    pub tarball_env: &'static str,
}

/// Debian's 6.1 (6.1.192): every seed, ported.
pub const LINUX_6_1: Release = Release {
    package: "linux-source-6.1",
    folder: "patches",
    seeds: &["000", "001", "002", "003", "004"],
    tarball_env: "PATCHPERF_LINUX_TARBALL",
};

/// Debian's 6.12 (6.12.118): the seeds it does not carry already.
pub const LINUX_6_12: Release = Release {
    package: "linux-source-6.12",
    folder: "patches-6.12",
    seeds: &["000", "004"],
    tarball_env: "PATCHPERF_LINUX_6_12_TARBALL",
};

/// Both releases.
pub const RELEASES: [Release; 2] = [LINUX_6_1, LINUX_6_12];

impl Release {
    /// The folder holding its ported seed patches and their README.
    pub fn patches_dir(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(self.folder)
    }

    /// Its ported patches, in file-name (= series) order.
    pub fn patches(&self) -> Vec<Mbox> {
        Mbox::all_in(&self.patches_dir())
    }
}

/// The folder holding the seed patches ported to 6.1 and their README.
pub fn patches_dir() -> PathBuf {
    LINUX_6_1.patches_dir()
}

/// One ported patch: a single-message mbox as `git format-patch` writes it.
#[derive(Debug)]
pub struct Mbox {
    /// Where it is.
    pub path: PathBuf,
    /// Its file name, e.g. `002-fs-use-__fput_sync-in-close-2.patch`.
    pub name: String,
    /// Its whole text.
    pub text: String,
}

impl Mbox {
    /// Every `*.patch` ported to 6.1, in file-name (= series) order.
    pub fn all() -> Vec<Mbox> {
        Self::all_in(&patches_dir())
    }

    /// Every `*.patch` in `dir`, in file-name (= series) order.
    pub fn all_in(dir: &Path) -> Vec<Mbox> {
        let mut all: Vec<Mbox> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "patch"))
            .map(|path| Mbox {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                text: fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display())),
                path,
            })
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The mail header block: from the second line (the first is the
    /// `From <sha> <date>` separator) to the first blank line.
    fn header_block(&self) -> &str {
        let after_separator = self.text.split_once('\n').map_or("", |(_, rest)| rest);
        after_separator
            .split_once("\n\n")
            .map_or(after_separator, |(headers, _)| headers)
    }

    /// The value of mail header `name` (case-insensitive), with folded
    /// continuation lines joined by one space, as `git mailinfo` unfolds them.
    pub fn header(&self, name: &str) -> Option<String> {
        let mut value: Option<String> = None;
        for line in self.header_block().lines() {
            if line.starts_with([' ', '\t']) {
                if let Some(v) = value.as_mut() {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                continue;
            }
            if value.is_some() {
                break;
            }
            if let Some((key, rest)) = line.split_once(':') {
                if key.eq_ignore_ascii_case(name) {
                    value = Some(rest.trim().to_string());
                }
            }
        }
        value
    }

    /// The commit message as `git am` takes it: from the first blank line to
    /// the first line that is exactly `---`.
    pub fn commit_message(&self) -> &str {
        let body = self.text.split_once("\n\n").map_or("", |(_, body)| body);
        body.split_once("\n---\n")
            .map_or(body, |(message, _)| message)
    }

    /// The files the diff touches, from its `diff --git a/X b/X` lines, in
    /// diff order.
    pub fn touched_files(&self) -> Vec<String> {
        self.text
            .lines()
            .filter_map(|line| line.strip_prefix("diff --git a/"))
            .filter_map(|rest| rest.split_once(" b/").map(|(a, _)| a.to_string()))
            .collect()
    }
}

/// Every file any of `patches` touches, sorted, without repeats.
pub fn touched_by_any(patches: &[Mbox]) -> Vec<String> {
    let mut all: Vec<String> = patches.iter().flat_map(Mbox::touched_files).collect();
    all.sort();
    all.dedup();
    all
}

/// The unpacked pristine tree and the key it is cached under.
#[derive(Debug, Clone)]
pub struct SourceTree {
    /// The top of the tree (holds `Makefile`).
    pub path: PathBuf,
    /// The first 16 hex digits of the tarball's sha256.
    pub key: String,
}

/// The linux-source-6.1 tree, unpacked on first use; `Err` carries the reason
/// to print when the tarball is not there and the test must skip.
pub fn source_tree() -> Result<SourceTree, String> {
    source_tree_of(LINUX_6_1)
}

/// `release`'s tree, unpacked on first use, as [`source_tree`].
pub fn source_tree_of(release: Release) -> Result<SourceTree, String> {
    static TREES: [OnceLock<Result<SourceTree, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let index = RELEASES
        .iter()
        .position(|r| r.package == release.package)
        .expect("a known release");
    TREES[index].get_or_init(|| unpack_once(release)).clone()
}

fn tarball(release: Release) -> Result<PathBuf, String> {
    let path = std::env::var_os(release.tarball_env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/usr/src/{}.tar.xz", release.package)));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing (install Debian's {} or set {})",
            path.display(),
            release.package,
            release.tarball_env
        ))
    }
}

fn unpack_once(release: Release) -> Result<SourceTree, String> {
    let tarball = tarball(release)?;
    let sum = Cmd::new("sha256sum")
        .arg(&tarball)
        .timeout(Duration::from_secs(120))
        .stdout_string()
        .unwrap_or_else(|e| panic!("hashing {}: {e}", tarball.display()));
    let key = sum
        .get(..16)
        .expect("sha256sum prints 64 hex digits")
        .to_string();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("linux-source")
        .join(&key);
    let tree = cache.join("tree");
    if tree.join("Makefile").is_file() {
        return Ok(SourceTree { path: tree, key });
    }

    // Unpack beside the final place and rename, so a tree that exists is
    // always complete even if an earlier run was killed half-way.
    fs::create_dir_all(&cache).unwrap_or_else(|e| panic!("creating {}: {e}", cache.display()));
    let partial = tempfile::Builder::new()
        .prefix(".partial-")
        .tempdir_in(&cache)
        .expect("temporary directory for unpacking");
    eprintln!("unpacking {} into {}", tarball.display(), cache.display());
    Cmd::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(partial.path())
        .timeout(Duration::from_secs(900))
        .run()
        .unwrap_or_else(|e| panic!("unpacking {}: {e}", tarball.display()));
    let mut tops = fs::read_dir(partial.path())
        .expect("reading the unpacked tarball")
        .map(|entry| entry.expect("directory entry").path());
    let top = match (tops.next(), tops.next()) {
        (Some(top), None) if top.is_dir() => top,
        _ => panic!(
            "{} does not hold exactly one top directory",
            tarball.display()
        ),
    };
    if let Err(e) = fs::rename(&top, &tree) {
        if !tree.join("Makefile").is_file() {
            panic!("moving {} to {}: {e}", top.display(), tree.display());
        }
    }
    Ok(SourceTree { path: tree, key })
}

/// `git` run in `dir`, blind to the user's and the system's git
/// configuration, with a committer identity of its own.
pub fn git(dir: &Path) -> Cmd {
    Cmd::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=patchperf test",
            "-c",
            "user.email=test@patchperf.invalid",
        ])
        .timeout(Duration::from_secs(120))
}

/// Copies `files` (paths relative to the tree) from `from` to `to`, making
/// parent directories; an existing file at the destination is replaced by a
/// fresh copy, never written through (it may be a hard link into `from`).
pub fn copy_files(from: &Path, to: &Path, files: &[String]) {
    for file in files {
        let (src, dst) = (from.join(file), to.join(file));
        fs::create_dir_all(dst.parent().expect("a file inside the tree"))
            .unwrap_or_else(|e| panic!("creating the parent of {}: {e}", dst.display()));
        match fs::remove_file(&dst) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("removing {}: {e}", dst.display()),
        }
        fs::copy(&src, &dst)
            .unwrap_or_else(|e| panic!("copying {} to {}: {e}", src.display(), dst.display()));
    }
}

/// `patch -p1` as the kernel pipeline uses it on an unpacked tarball: no
/// fuzz (offsets are fine), no backup files, rejects discarded rather than
/// left in the tree, an already applied patch an error rather than undone.
pub fn patch_p1(tree: &Path, mbox: &Mbox) -> Cmd {
    Cmd::new("patch")
        .args([
            "-p1",
            "--fuzz=0",
            "--no-backup-if-mismatch",
            "--reject-file=-",
            "--forward",
        ])
        .arg("-d")
        .arg(tree)
        .arg("-i")
        .arg(&mbox.path)
        .timeout(Duration::from_secs(60))
}
