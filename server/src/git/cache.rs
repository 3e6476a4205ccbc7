//! How much disk the mirrors take, and keeping it under a bound: after a
//! clone or fetch, the mirrors used least recently (by the stamp each use
//! touches) are removed until the rest fit, never one in use. A removed
//! mirror is renamed out of the way at once and deleted in the
//! background, so a request opening it next clones it afresh.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

/// The file whose modification time says when a mirror was last used.
pub const STAMP: &str = "patchperf-used";

/// What the mirrors take, as `/healthz` shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Usage {
    /// Mirrors on disk.
    pub mirrors: usize,
    /// Their bytes, at the last count.
    pub bytes: u64,
    /// The bound (0: none).
    pub max_bytes: u64,
    /// Mirrors removed to stay under it since the server started.
    pub evicted: u64,
    /// Mirrors removed because the request that cloned them was refused.
    pub dropped: u64,
    /// git commands running now.
    pub running: usize,
    /// Clones and fetches from remotes since the server started.
    pub remote_reads: u64,
    /// Whether `mirrors` and `bytes` are up to date.
    #[serde(skip)]
    pub counted: bool,
}

/// One mirror on disk.
#[derive(Debug, Clone)]
pub struct OnDisk {
    /// Its directory.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: u64,
    /// When it was last used.
    pub used: SystemTime,
}

/// Every mirror under `dir` (`*.git` directories), oldest use first.
pub fn list(dir: &Path) -> Vec<OnDisk> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<OnDisk> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "git") && p.is_dir())
        .map(|path| {
            let used = std::fs::metadata(path.join(STAMP))
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            OnDisk {
                bytes: size(&path),
                used,
                path,
            }
        })
        .collect();
    found.sort_by_key(|m| m.used);
    found
}

/// The bytes of the files under `path` (symbolic links not followed).
pub fn size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Notes that the mirror at `path` is used now.
pub fn touch(path: &Path) {
    let _ = std::fs::write(path.join(STAMP), b"");
}

/// Moves `path` out of the way at once (a rename) and deletes it in the
/// background.
pub fn remove(path: &Path) {
    let trash = path.with_extension(format!("trash-{}", rand::random::<u32>()));
    match std::fs::rename(path, &trash) {
        Ok(()) => {
            tokio::task::spawn_blocking(move || {
                if let Err(e) = std::fs::remove_dir_all(&trash) {
                    tracing::warn!(path = %trash.display(), error = %e, "removing a mirror failed");
                }
            });
        }
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "moving a mirror away failed"),
    }
}

/// Left-overs of earlier runs under `dir`: clones that never finished and
/// mirrors moved away but not yet deleted.
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let ext = path.extension().map(|x| x.to_string_lossy().into_owned());
        if ext.is_some_and(|x| x == "partial" || x.starts_with("trash-")) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}
