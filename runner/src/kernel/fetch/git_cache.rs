//! Keeping the cache's `git/` bounded. A base worktree is a full kernel
//! checkout (1.5 GB for 6.1) and one is made per mirror and base commit,
//! so a runner following trees whose base moves, or measuring several
//! repositories, would keep one for every base it ever built. Before a new
//! worktree is made, [`prune`] removes what cannot be used again — a
//! mirror of a repository on this machine that is gone (a scratch
//! repository of a test, a moved path), with its worktrees — and the
//! worktrees beyond [`KEPT_WORKTREES`] used longest ago. A removed
//! worktree is checked out again when a job needs it; the kernels built
//! from it stay in `kernels/`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::proc::Cmd;

/// Base worktrees kept, the most recently used.
pub const KEPT_WORKTREES: usize = 4;

/// What `git/` holds.
#[derive(Debug, Default)]
struct Listing {
    /// `<hash>.git`.
    mirrors: Vec<PathBuf>,
    /// `<hash>.git-<commit>`, with its `.complete` marker's mtime (when it
    /// was last used; `None`: never completed).
    worktrees: Vec<(PathBuf, Option<SystemTime>)>,
}

fn list(git_dir: &Path) -> Listing {
    let mut listing = Listing::default();
    let Ok(entries) = std::fs::read_dir(git_dir) else {
        return listing;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !path.is_dir() {
            continue;
        }
        if name.ends_with(".git") {
            listing.mirrors.push(path);
        } else if name.contains(".git-") && !name.ends_with(".git-clone") {
            let used = std::fs::metadata(marker(&path))
                .and_then(|m| m.modified())
                .ok();
            listing.worktrees.push((path, used));
        }
    }
    listing
}

/// The `.complete` marker of worktree `dir`.
pub fn marker(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_os_string();
    name.push(".complete");
    PathBuf::from(name)
}

/// Marks worktree `dir` used now, for [`prune`]'s order.
pub fn touch(dir: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(marker(dir)) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// The mirror worktree `dir` belongs to: `<hash>.git-<commit>` → `<hash>.git`.
fn mirror_of(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    let (hash, _) = name.split_once(".git-")?;
    Some(dir.with_file_name(format!("{hash}.git")))
}

/// Whether `mirror` mirrors a repository on this machine that is gone.
fn source_gone(mirror: &Path) -> bool {
    let Ok(url) = Cmd::new("git")
        .arg("config")
        .arg("--file")
        .arg(mirror.join("config"))
        .args(["remote.origin.url"])
        .stdout_string()
    else {
        return false;
    };
    let url = url.trim();
    let local = url
        .strip_prefix("file://")
        .or_else(|| url.starts_with('/').then_some(url));
    local.is_some_and(|path| !Path::new(path).exists())
}

/// Frees `git_dir` as the module says, sparing `keep` (the worktree about
/// to be used) and its mirror. Best effort: what cannot be removed now is
/// tried again before the next new worktree. Returns what it removed.
pub fn prune(git_dir: &Path, keep: &Path) -> Vec<PathBuf> {
    let listing = list(git_dir);
    let keep_mirror = mirror_of(keep);
    let mut removed = Vec::new();
    let mut remove = |path: &Path| {
        if std::fs::remove_dir_all(path).is_ok() {
            let _ = std::fs::remove_file(marker(path));
            removed.push(path.to_path_buf());
        }
    };
    let gone: Vec<&PathBuf> = listing
        .mirrors
        .iter()
        .filter(|m| Some(m.as_path()) != keep_mirror.as_deref() && source_gone(m))
        .collect();
    let mut live = Vec::new();
    for (dir, used) in &listing.worktrees {
        if dir == keep {
            continue;
        }
        match mirror_of(dir) {
            Some(m) if gone.contains(&&m) => remove(dir),
            _ => live.push((dir, *used)),
        }
    }
    for mirror in gone {
        remove(mirror);
    }
    // Newest first; a worktree never completed counts as oldest. One
    // place is the new worktree's.
    live.sort_by_key(|&(_, used)| std::cmp::Reverse(used));
    let mut pruned_mirrors = Vec::new();
    for (dir, _) in live.into_iter().skip(KEPT_WORKTREES.saturating_sub(1)) {
        remove(dir);
        pruned_mirrors.extend(mirror_of(dir));
    }
    // The mirrors forget the removed worktrees.
    for mirror in pruned_mirrors {
        let _ = Cmd::new("git")
            .arg("-C")
            .arg(&mirror)
            .args(["worktree", "prune"])
            .run();
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(args: &[&str]) {
        Cmd::new("git").args(args).run().unwrap();
    }

    /// A mirror of a one-commit repository at `origin`, named `<hash>.git`
    /// in `git_dir`, with a worktree of that commit used at `used`.
    fn mirror_with_worktree(
        git_dir: &Path,
        hash: &str,
        origin: &Path,
        used: SystemTime,
    ) -> PathBuf {
        if !origin.exists() {
            git(&["init", "--quiet", origin.to_str().unwrap()]);
            std::fs::write(origin.join("Makefile"), "all:\n").unwrap();
            for args in [
                &["add", "Makefile"][..],
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "commit",
                    "--quiet",
                    "-m",
                    "a",
                ],
            ] {
                Cmd::new("git")
                    .arg("-C")
                    .arg(origin)
                    .args(args)
                    .run()
                    .unwrap();
            }
        }
        let mirror = git_dir.join(format!("{hash}.git"));
        let url = format!("file://{}", origin.display());
        git(&[
            "clone",
            "--mirror",
            "--quiet",
            &url,
            mirror.to_str().unwrap(),
        ]);
        let dir = git_dir.join(format!("{hash}.git-0123456789ab"));
        Cmd::new("git")
            .arg("-C")
            .arg(&mirror)
            .args(["worktree", "add", "--detach", "--quiet"])
            .arg(&dir)
            .arg("HEAD")
            .run()
            .unwrap();
        std::fs::write(marker(&dir), "").unwrap();
        std::fs::File::options()
            .append(true)
            .open(marker(&dir))
            .unwrap()
            .set_modified(used)
            .unwrap();
        dir
    }

    #[test]
    fn gone_sources_go_and_the_least_recently_used_worktrees_beyond_the_kept_ones() {
        let scratch = tempfile::tempdir().unwrap();
        let git_dir = scratch.path().join("git");
        std::fs::create_dir(&git_dir).unwrap();
        let origin = scratch.path().join("origin");
        let hour = std::time::Duration::from_secs(3600);
        let now = SystemTime::now();
        // Six worktrees of a live repository, used 1…6 hours ago.
        let live: Vec<PathBuf> = (1..=6u32)
            .map(|h| mirror_with_worktree(&git_dir, &format!("live{h}"), &origin, now - hour * h))
            .collect();
        // One of a repository that is gone.
        let gone_origin = scratch.path().join("gone");
        let gone = mirror_with_worktree(&git_dir, "gone", &gone_origin, now);
        std::fs::remove_dir_all(&gone_origin).unwrap();
        // The oldest one is about to be used again.
        let keep = live[5].clone();

        let removed = prune(&git_dir, &keep);
        assert!(
            !gone.exists() && !git_dir.join("gone.git").exists(),
            "{removed:?}"
        );
        assert!(keep.exists(), "the worktree in use stays");
        // With the one in use, the kept number: the 3 used most recently.
        for (i, dir) in live.iter().enumerate().take(5) {
            assert_eq!(
                dir.exists(),
                i < KEPT_WORKTREES - 1,
                "{} ({removed:?})",
                dir.display()
            );
            assert_eq!(marker(dir).exists(), dir.exists());
        }
        // Their live mirrors stay, and know only the worktrees left.
        assert!(git_dir.join("live5.git").join("HEAD").is_file());
        let listed = Cmd::new("git")
            .arg("-C")
            .arg(git_dir.join("live5.git"))
            .args(["worktree", "list"])
            .stdout_string()
            .unwrap();
        assert!(!listed.contains("live5.git-"), "{listed}");
        // Nothing more to do a second time.
        assert_eq!(prune(&git_dir, &keep), Vec::<PathBuf>::new());
    }
}
