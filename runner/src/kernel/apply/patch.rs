//! Apply: puts a patch series (an mbox, as `git format-patch` or a mail
//! client writes it) on the patched side's tree, patch by patch:
//! - on an unpacked tarball (overlay or copy), `patch -p1 --fuzz=0`;
//! - on an overlay over a git worktree, `git mailinfo` (the diff out of the
//!   mail, as `git am` takes it) and `git apply`: git's own diff engine,
//!   as strict as `git am` (whole context, no fuzz, a patch goes on whole
//!   or not at all), but without `--index`, so the pristine worktree's
//!   HEAD and index, which the overlay shares, stay as they are;
//! - on a copy of a git worktree (a worktree of its own, where overlayfs
//!   cannot be mounted), `git am`.
//!
//! A series that does not apply is reported with the patch's subject, the
//! tool's words and the failing hunk.
//! Which messages are patches is the shared crate's rule
//! ([`patchperf_common::mbox`]), the one the server accepted the series by.

use std::path::{Path, PathBuf};
use std::time::Duration;

use patchperf_common::mbox::{self, Message};

use crate::Error;
use crate::kernel::fetch::source::{SourceKind, Tree};
use crate::kernel::fetch::tree_view::View;
use crate::proc::Cmd;

const APPLY_LIMIT: Duration = Duration::from_secs(10 * 60);

/// One message of a series that carries a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// The message on its own, as [`split_mbox`] wrote it.
    pub path: PathBuf,
    /// Its `Subject:` header (`[PATCH 1/2] fs: …`).
    pub subject: String,
}

/// Why a series did not go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// A patch of the series did not apply: the subject, the tool's output
    /// and the rejected hunk(s).
    DoesNotApply {
        /// Which patch (`2/3 "fs: …"`).
        patch: String,
        /// What failed, with the hunk.
        detail: String,
    },
    /// The mbox holds no diff at all.
    NoPatches,
    /// The machine failed (a tool missing, the disk full).
    Machine(String),
}

impl From<Error> for ApplyError {
    fn from(e: Error) -> Self {
        ApplyError::Machine(e.to_string())
    }
}

/// Splits an mbox into its messages (one file each, in `dir`) and keeps
/// those that carry a diff; cover letters and replies are left out. The
/// split is the shared crate's ([`mbox::split`]), the one the server
/// accepted the series by, so a message saved without its `From ` line is
/// one patch here as it was there (`git mailsplit` called it a corrupt
/// mailbox). A message the server would refuse (unreadable headers, a diff
/// without Subject or From) stops the series here too.
pub fn split_mbox(mbox: &Path, dir: &Path) -> Result<Vec<PatchFile>, ApplyError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let text = std::fs::read_to_string(mbox)
        .map_err(|e| Error::io(format!("reading {}", mbox.display()), e))?;
    let messages = mbox::split(&text);
    let count = messages.len();
    let mut patches = Vec::new();
    for (index, message_text) in messages.into_iter().enumerate() {
        let message = Message::read(message_text, index).map_err(|e| ApplyError::DoesNotApply {
            patch: format!("message {}/{count}", index + 1),
            detail: e.to_string(),
        })?;
        if message.has_diff {
            // Written as the mbox holds it, CRs included: a CRLF patch must
            // reach patch(1) as it is.
            let path = dir.join(format!("{:04}", index + 1));
            std::fs::write(&path, format!("{}{message_text}", mbox::SEPARATOR))
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
            patches.push(PatchFile {
                subject: message.subject,
                path,
            });
        }
    }
    Ok(patches)
}

/// A series that went on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// Patches applied.
    pub patches: usize,
    /// Files the series wrote (relative to the tree's top), in order of
    /// first appearance.
    pub files: Vec<String>,
}

/// Applies the series in `mbox` to `tree`, using `scratch` for the split
/// messages, their diffs and reject files.
pub fn apply(tree: &Tree, mbox: &Path, scratch: &Path) -> Result<Applied, ApplyError> {
    let patches = split_mbox(mbox, &scratch.join("series"))?;
    if patches.is_empty() {
        return Err(ApplyError::NoPatches);
    }
    match (&tree.kind, tree.copy_dir()) {
        (SourceKind::Tarball, _) => apply_with_patch(&tree.view, &patches, scratch)?,
        (SourceKind::Git { .. }, None) => apply_with_git_apply(&tree.view, &patches)?,
        (SourceKind::Git { .. }, Some(_)) => apply_with_git_am(&tree.view, &patches)?,
    }
    let mut files = Vec::new();
    for p in &patches {
        let text = std::fs::read(&p.path)
            .map_err(|e| Error::io(format!("reading {}", p.path.display()), e))?;
        for f in written_files(&String::from_utf8_lossy(&text)) {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    Ok(Applied {
        patches: patches.len(),
        files,
    })
}

/// The files a patch writes (`-p1` paths): the new side of each diff, the
/// target of each rename, and the file of a git diff without hunks (a mode
/// change).
pub fn written_files(patch: &str) -> Vec<String> {
    let mut files = Vec::new();
    for line in patch.lines() {
        let path = if let Some(rest) = line.strip_prefix("+++ ") {
            // `+++ b/fs/open.c` or `+++ b/fs/open.c\t2024-01-01 …`
            let path = rest.split('\t').next().unwrap_or(rest).trim_end();
            match path.split_once('/') {
                Some((_, p)) if path != "/dev/null" => p,
                _ => continue,
            }
        } else if let Some(to) = line.strip_prefix("rename to ") {
            to.trim_end()
        } else if let Some(path) = line.strip_prefix("diff --git ").and_then(same_path) {
            path
        } else {
            continue;
        };
        if !path.is_empty() && !files.iter().any(|f| f == path) {
            files.push(path.to_string());
        }
    }
    files
}

/// `a/P b/P` -> `P`: the path of a git diff header whose two sides agree
/// (a header of two different paths is a rename, named by `rename to`).
fn same_path(sides: &str) -> Option<&str> {
    let len = sides.len().checked_sub(5)?;
    if len % 2 != 0 {
        return None;
    }
    let path = sides.strip_prefix("a/")?.get(..len / 2)?;
    (sides.get(2 + len / 2..)? == format!(" b/{path}")).then_some(path)
}

fn which(patches: &[PatchFile], i: usize) -> String {
    format!("{}/{} {:?}", i + 1, patches.len(), patches[i].subject)
}

fn apply_with_patch(tree: &View, patches: &[PatchFile], scratch: &Path) -> Result<(), ApplyError> {
    for (i, p) in patches.iter().enumerate() {
        let rej = scratch.join(format!("{:04}.rej", i + 1));
        // Strict like `git am`: no fuzz, no reversed patches, no questions.
        let out = tree
            .cmd("patch")
            .args([
                "-p1",
                "--batch",
                "--forward",
                "--fuzz=0",
                "--no-backup-if-mismatch",
            ])
            .arg("--reject-file")
            .arg(&rej)
            .arg("-i")
            .arg(&p.path)
            .timeout(APPLY_LIMIT)
            .tail_lines(200)
            .output()?;
        if !out.success() {
            let mut detail = out.tail.to_string();
            if let Ok(hunks) = std::fs::read_to_string(&rej) {
                detail.push_str("rejected hunk(s):\n");
                detail.push_str(&hunks);
            }
            return Err(ApplyError::DoesNotApply {
                patch: which(patches, i),
                detail,
            });
        }
    }
    Ok(())
}

/// Each patch's diff, taken out of its mail by `git mailinfo` (which undoes
/// transfer encodings, as for `git am`), then `git apply` in the tree.
/// `git am` would also commit, moving HEAD and the index; in an overlay on
/// a git worktree those are the pristine worktree's.
fn apply_with_git_apply(tree: &View, patches: &[PatchFile]) -> Result<(), ApplyError> {
    for (i, p) in patches.iter().enumerate() {
        let (message, diff) = (p.path.with_extension("msg"), p.path.with_extension("diff"));
        let info = Cmd::new("git")
            .arg("mailinfo")
            .arg(&message)
            .arg(&diff)
            .stdin_file(&p.path)
            .capture_stdout()
            .timeout(APPLY_LIMIT)
            .output()?;
        if !info.success() {
            return Err(ApplyError::DoesNotApply {
                patch: which(patches, i),
                detail: format!("git mailinfo cannot read the message:\n{}", info.tail),
            });
        }
        // No --index, no --cached: the working tree only. Whole context,
        // no fuzz and all-or-nothing are `git apply`'s defaults, as in
        // `git am`.
        let out = tree
            .cmd("git")
            .arg("apply")
            .arg(&diff)
            .timeout(APPLY_LIMIT)
            .tail_lines(200)
            .output()?;
        if !out.success() {
            let tail = out.tail.to_string();
            let mut detail = tail.clone();
            if let Ok(text) = std::fs::read_to_string(&diff) {
                push_hunks(&mut detail, &tail, &text);
            }
            return Err(ApplyError::DoesNotApply {
                patch: which(patches, i),
                detail,
            });
        }
    }
    Ok(())
}

/// Appends to `detail` the hunk of `patch` at each place git's `output`
/// says it failed.
fn push_hunks(detail: &mut String, output: &str, patch: &str) {
    for (file, line) in failed_locations(output) {
        if let Some(hunk) = hunk_at(patch, &file, line) {
            detail.push_str(&format!("rejected hunk ({file}:{line}):\n{hunk}"));
        }
    }
}

fn apply_with_git_am(tree: &View, patches: &[PatchFile]) -> Result<(), ApplyError> {
    let out = tree
        .cmd("git")
        .args([
            "-c",
            "user.name=patchperf",
            "-c",
            "user.email=patchperf@localhost",
            "am",
            "--no-3way",
            "--keep-cr",
        ])
        .args(patches.iter().map(|p| &p.path))
        .timeout(APPLY_LIMIT)
        .tail_lines(200)
        .output()?;
    if out.success() {
        return Ok(());
    }
    let tail = out.tail.to_string();
    // `Patch failed at 0002 fs: …` names the patch; `error: patch failed:
    // fs/open.c:1234` names the hunk, which we cut out of the patch.
    let failed_at = tail
        .lines()
        .find_map(|l| l.strip_prefix("Patch failed at "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=patches.len()).contains(n));
    let patch = match failed_at {
        Some(n) => which(patches, n - 1),
        None => format!("of {}", patches.len()),
    };
    let mut detail = tail.clone();
    if let Some(n) = failed_at {
        if let Ok(text) = std::fs::read_to_string(&patches[n - 1].path) {
            push_hunks(&mut detail, &tail, &text);
        }
    }
    let _ = tree.cmd("git").args(["am", "--abort"]).run();
    Err(ApplyError::DoesNotApply { patch, detail })
}

/// `(file, line)` of each `error: patch failed: FILE:LINE` in git's output.
pub fn failed_locations(output: &str) -> Vec<(String, u64)> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("error: patch failed: "))
        .filter_map(|loc| {
            let (file, line) = loc.rsplit_once(':')?;
            Some((file.to_string(), line.trim().parse().ok()?))
        })
        .collect()
}

/// The hunk of `file` in a patch whose old range starts at `line`, with its
/// `@@` header; its length comes from the header's line counts.
pub fn hunk_at(patch: &str, file: &str, line: u64) -> Option<String> {
    let mut in_file = false;
    let mut lines = patch.lines();
    while let Some(l) = lines.next() {
        if let Some(path) = l.strip_prefix("+++ ") {
            in_file = path.trim_start_matches("b/") == file;
            continue;
        }
        if !in_file {
            continue;
        }
        let Some((old_start, mut old_left, mut new_left)) = hunk_header(l) else {
            continue;
        };
        if old_start != line {
            continue;
        }
        let mut hunk = format!("{l}\n");
        while old_left > 0 || new_left > 0 {
            let Some(body) = lines.next() else { break };
            match body.chars().next() {
                Some('-') => old_left = old_left.saturating_sub(1),
                Some('+') => new_left = new_left.saturating_sub(1),
                Some('\\') => {}
                _ => {
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
            }
            hunk.push_str(body);
            hunk.push('\n');
        }
        return Some(hunk);
    }
    None
}

/// `@@ -12,7 +12,8 @@` → (12, 7, 8); a missing count means 1.
fn hunk_header(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u64, u64)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old)?;
    let (_, new_count) = range(new)?;
    Some((old_start, old_count, new_count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cache::Cache;
    use crate::kernel::fetch::source::{Pristine, fetch};
    use crate::kernel::fetch::tree_view::overlay_works;
    use patchperf_common::protocol::BaseSource;

    const SERIES: &str = "\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH 0/2] fs: two small things

Cover letter without a diff.

From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH 1/2] fs: open
 faster

---
 fs/open.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/fs/open.c b/fs/open.c
--- a/fs/open.c
+++ b/fs/open.c
@@ -1,3 +1,3 @@
 int a;
-int open;
+int open_fast;
 int z;
-- 
2.39.5

From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH 2/2] fs: close

---
diff --git a/fs/close.c b/fs/close.c
--- a/fs/close.c
+++ b/fs/close.c
@@ -1,2 +1,2 @@
 int b;
-int close;
+int close_fast;
-- 
2.39.5
";

    fn tree_files(dir: &Path, open_c: &str) {
        std::fs::create_dir_all(dir.join("fs")).unwrap();
        std::fs::write(dir.join("Makefile"), "all:\n").unwrap();
        std::fs::write(dir.join("fs/open.c"), open_c).unwrap();
        std::fs::write(dir.join("fs/close.c"), "int b;\nint close;\n").unwrap();
    }

    fn tarball_pristine(
        root: &Path,
        lock: &crate::kernel::cache::CacheLock,
        open_c: &str,
    ) -> Pristine {
        let src = root.join("linux-t");
        tree_files(&src, open_c);
        let tarball = root.join("linux-t.tar");
        Cmd::new("tar")
            .arg("-cf")
            .arg(&tarball)
            .arg("-C")
            .arg(root)
            .arg("linux-t")
            .run()
            .unwrap();
        fetch(
            lock,
            &BaseSource::Tarball {
                name: tarball.to_str().unwrap().to_string(),
            },
        )
        .unwrap()
    }

    fn git_pristine(root: &Path, lock: &crate::kernel::cache::CacheLock, open_c: &str) -> Pristine {
        let up = root.join("up");
        tree_files(&up, open_c);
        for args in [
            &["init", "--quiet"][..],
            &["add", "."],
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "commit",
                "--quiet",
                "-m",
                "b",
            ],
        ] {
            Cmd::new("git").arg("-C").arg(&up).args(args).run().unwrap();
        }
        fetch(
            lock,
            &BaseSource::Git {
                url: up.to_str().unwrap().to_string(),
                commit: "HEAD".to_string(),
            },
        )
        .unwrap()
    }

    #[test]
    fn subjects_are_unfolded_and_cover_letters_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, SERIES).unwrap();
        let patches = split_mbox(&mbox, &dir.path().join("split")).unwrap();
        let subjects: Vec<&str> = patches.iter().map(|p| p.subject.as_str()).collect();
        assert_eq!(
            subjects,
            ["[PATCH 1/2] fs: open faster", "[PATCH 2/2] fs: close"]
        );
    }

    #[test]
    fn the_files_a_patch_writes_are_its_new_sides_and_rename_targets() {
        let patch = "--- a/fs/open.c\n+++ b/fs/open.c\n@@ -1 +1 @@\n-a\n+b\n\
                     diff --git a/include/linux/fs.h b/include/linux/fs_old.h\n\
                     rename from include/linux/fs.h\nrename to include/linux/fs_old.h\n\
                     --- a/fs/gone.c\n+++ /dev/null\n\
                     --- linux-6.1.orig/fs/new.c\t2024-01-01 00:00:00\n\
                     +++ linux-6.1/fs/new.c\t2024-01-01 00:00:00\n\
                     --- a/fs/open.c\n+++ b/fs/open.c\n";
        assert_eq!(
            written_files(patch),
            ["fs/open.c", "include/linux/fs_old.h", "fs/new.c"]
        );
    }

    #[test]
    fn a_mode_change_writes_its_file() {
        let patch = "diff --git a/scripts/check.sh b/scripts/check.sh\n\
                     old mode 100644\nnew mode 100755\n\
                     diff --git a/x y b/x y\n";
        assert_eq!(written_files(patch), ["scripts/check.sh", "x y"]);
        assert_eq!(same_path("a/x b/y"), None);
        assert_eq!(same_path("a/é b/é"), Some("é"));
        assert_eq!(same_path("ab"), None);
    }

    #[test]
    fn git_failure_locations_and_hunks_are_found() {
        let out = "Applying: fs: open faster\nerror: patch failed: fs/open.c:1\n\
                   error: fs/open.c: patch does not apply\nPatch failed at 0001 fs: open faster\n";
        assert_eq!(failed_locations(out), [("fs/open.c".to_string(), 1)]);
        assert_eq!(
            hunk_at(SERIES, "fs/open.c", 1).unwrap(),
            "@@ -1,3 +1,3 @@\n int a;\n-int open;\n+int open_fast;\n int z;\n"
        );
        assert_eq!(hunk_at(SERIES, "fs/open.c", 7), None);
        assert_eq!(
            hunk_header("@@ -12,7 +12,8 @@ int f(void)"),
            Some((12, 7, 8))
        );
        assert_eq!(hunk_header("@@ -3 +3 @@"), Some((3, 1, 1)));
    }

    type MakePristine = fn(&Path, &crate::kernel::cache::CacheLock, &str) -> Pristine;

    /// How a test's patched tree is made, as the pipeline makes it: an
    /// overlay where overlayfs can be mounted, else a copy.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Way {
        Copy,
        Overlay,
    }

    /// The patched tree of `pristine` in `scratch`, made `way`; `None`
    /// (the test skips, saying why) for an overlay where overlayfs cannot
    /// be mounted here.
    fn patched_tree(way: Way, pristine: &Pristine, scratch: &Path) -> Option<Tree> {
        let dest = scratch.join("linux");
        let tree = match way {
            Way::Copy => Tree::copy_of(pristine, &dest).unwrap(),
            Way::Overlay => {
                if let Err(why) = overlay_works(&pristine.dir, scratch) {
                    eprintln!("SKIPPED: overlayfs not usable here: {why}");
                    return None;
                }
                Tree::overlay_on(pristine, &dest).unwrap()
            }
        };
        assert_eq!(tree.copy_dir().is_none(), way == Way::Overlay);
        Some(tree)
    }

    /// A git pristine worktree's own HEAD and index (they live in the
    /// mirror's `worktrees/`, outside the tree): path, sha256 and mtime of
    /// each; nothing for a tarball tree.
    fn worktree_state(pristine: &Pristine) -> Vec<(String, String, std::time::SystemTime)> {
        if pristine.kind == SourceKind::Tarball {
            return Vec::new();
        }
        ["HEAD", "index"]
            .iter()
            .map(|name| {
                let path = Cmd::new("git")
                    .arg("-C")
                    .arg(&pristine.dir)
                    .args(["rev-parse", "--path-format=absolute", "--git-path", name])
                    .stdout_string()
                    .unwrap();
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                let bytes = std::fs::read(&path).unwrap();
                (path, patchperf_common::digest::sha256_hex(&bytes), modified)
            })
            .collect()
    }

    fn check_series(make: MakePristine, way: Way) {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, SERIES).unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();

        // Applies cleanly on the tree it was made for.
        let pristine = make(dir.path(), &lock, "int a;\nint open;\nint z;\n");
        let before = worktree_state(&pristine);
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(way, &pristine, scratch.path()) else {
            return;
        };
        let applied = apply(&tree, &mbox, scratch.path()).unwrap();
        assert_eq!(applied.patches, 2);
        assert_eq!(applied.files, ["fs/open.c", "fs/close.c"]);
        assert_eq!(
            tree.view.read_to_string("fs/open.c").unwrap(),
            "int a;\nint open_fast;\nint z;\n"
        );
        assert_eq!(
            tree.view.read_to_string("fs/close.c").unwrap(),
            "int b;\nint close_fast;\n"
        );
        assert_eq!(
            std::fs::read_to_string(pristine.dir.join("fs/open.c")).unwrap(),
            "int a;\nint open;\nint z;\n",
            "the pristine tree was patched"
        );
        assert_eq!(worktree_state(&pristine), before);
    }

    #[test]
    fn a_series_applies_to_a_tarball_tree_with_patch() {
        check_series(tarball_pristine, Way::Copy);
    }

    #[test]
    fn a_series_applies_in_an_overlay_and_leaves_the_pristine_tree_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, SERIES).unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = tarball_pristine(dir.path(), &lock, "int a;\nint open;\nint z;\n");
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(Way::Overlay, &pristine, scratch.path()) else {
            return;
        };
        let layers = scratch.path().join("linux");
        assert_eq!(tree.view.dir(), pristine.dir);
        assert_eq!(apply(&tree, &mbox, scratch.path()).unwrap().patches, 2);
        assert_eq!(
            tree.view.read_to_string("fs/close.c").unwrap(),
            "int b;\nint close_fast;\n"
        );
        // Only what the series touched is in the upper layer.
        assert!(layers.join("upper/fs/open.c").is_file());
        assert!(!layers.join("upper/Makefile").exists());
        assert_eq!(
            std::fs::read_to_string(pristine.dir.join("fs/open.c")).unwrap(),
            "int a;\nint open;\nint z;\n"
        );
        drop(tree);
        assert!(!layers.exists());
        assert!(pristine.dir.join("fs/open.c").is_file());
    }

    #[test]
    fn a_series_applies_to_a_git_tree_with_git_am() {
        check_series(git_pristine, Way::Copy);
    }

    #[test]
    fn a_series_applies_to_an_overlay_on_a_git_tree_with_git_apply() {
        check_series(git_pristine, Way::Overlay);
    }

    /// What Kbuild may run in the patched tree does not reach the pristine
    /// worktree's index either: a `git status` that refreshes the index
    /// (setlocalversion asks for `--no-optional-locks`, a script may not)
    /// and an older setlocalversion's `git update-index --refresh`, both
    /// run through the overlay as make runs them.
    #[test]
    fn git_in_an_overlay_on_a_git_tree_leaves_head_and_index_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, SERIES).unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = git_pristine(dir.path(), &lock, "int a;\nint open;\nint z;\n");
        let SourceKind::Git { commit, .. } = &pristine.kind else {
            panic!("not a git source");
        };
        let before = worktree_state(&pristine);
        assert_eq!(before.len(), 2);
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(Way::Overlay, &pristine, scratch.path()) else {
            return;
        };
        apply(&tree, &mbox, scratch.path()).unwrap();
        let status = tree
            .view
            .cmd("git")
            .args(["status", "--porcelain", "-uno"])
            .capture_stdout()
            .run()
            .unwrap();
        // Git in the overlay sees the series against the worktree's index.
        assert_eq!(status.stdout, " M fs/close.c\n M fs/open.c\n");
        // Exits 1 (files need updating), after writing what it refreshed.
        tree.view
            .cmd("git")
            .args(["update-index", "-q", "--refresh"])
            .output()
            .unwrap();
        let head = tree.view.cmd("git").args(["rev-parse", "HEAD"]);
        assert_eq!(&head.stdout_string().unwrap(), commit);
        assert_eq!(worktree_state(&pristine), before);
    }

    fn check_rejection(make: MakePristine, way: Way) {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, SERIES).unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = make(dir.path(), &lock, "int a;\nint open_other;\nint z;\n");
        let before = worktree_state(&pristine);
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(way, &pristine, scratch.path()) else {
            return;
        };
        match apply(&tree, &mbox, scratch.path()) {
            Err(ApplyError::DoesNotApply { patch, detail }) => {
                assert_eq!(patch, "1/2 \"[PATCH 1/2] fs: open faster\"");
                assert!(detail.contains("fs/open.c"), "no file in:\n{detail}");
                assert!(detail.contains("-int open;"), "no hunk in:\n{detail}");
                assert!(detail.contains("+int open_fast;"), "no hunk in:\n{detail}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(worktree_state(&pristine), before);
    }

    use patchperf_testkit::mbox::MODE_ONLY;

    fn check_mode_only(make: MakePristine, way: Way) {
        use std::os::unix::fs::PermissionsExt;
        // The server's rule: this is a series with one patch in it.
        let series = patchperf_common::mbox::parse(MODE_ONLY).unwrap();
        assert_eq!(series.patch_subjects().count(), 1);

        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbox");
        std::fs::write(&mbox, MODE_ONLY).unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = make(dir.path(), &lock, "int a;\n");
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(way, &pristine, scratch.path()) else {
            return;
        };
        let applied = apply(&tree, &mbox, scratch.path()).unwrap();
        assert_eq!(applied.patches, 1);
        assert_eq!(applied.files, ["fs/open.c"]);
        // As the build sees the tree (the copy may be mounted at the
        // pristine tree's path in the tools' own namespace).
        let mode = tree
            .view
            .cmd("stat")
            .args(["-c", "%a", "fs/open.c"])
            .capture_stdout()
            .output()
            .unwrap();
        assert_eq!(mode.stdout.trim(), "755");
        assert_eq!(
            std::fs::metadata(pristine.dir.join("fs/open.c"))
                .unwrap()
                .permissions()
                .mode()
                & 0o111,
            0,
            "the pristine tree was changed"
        );
    }

    #[test]
    fn a_mode_only_patch_applies_to_a_tarball_tree() {
        check_mode_only(tarball_pristine, Way::Copy);
    }

    #[test]
    fn a_mode_only_patch_applies_to_a_git_tree() {
        check_mode_only(git_pristine, Way::Copy);
    }

    #[test]
    fn a_mode_only_patch_applies_to_an_overlay_on_a_git_tree() {
        check_mode_only(git_pristine, Way::Overlay);
    }

    #[test]
    fn a_rejected_hunk_is_reported_for_tarball_trees() {
        check_rejection(tarball_pristine, Way::Copy);
    }

    #[test]
    fn a_rejected_hunk_is_reported_for_git_trees() {
        check_rejection(git_pristine, Way::Copy);
    }

    #[test]
    fn a_rejected_hunk_is_reported_for_overlays_on_git_trees() {
        check_rejection(git_pristine, Way::Overlay);
    }

    /// One patch saved from a mail client: headers, but no `From ` line
    /// (the series' first patch, as the shared split reads it).
    fn bare_message() -> &'static str {
        patchperf_common::mbox::split(SERIES)[1]
    }

    fn check_bare_message(make: MakePristine, way: Way) {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("one.eml");
        assert!(bare_message().starts_with("From: "));
        std::fs::write(&mbox, bare_message()).unwrap();
        assert!(patchperf_common::mbox::parse(bare_message()).is_ok());
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = make(dir.path(), &lock, "int a;\nint open;\nint z;\n");
        let scratch = lock.scratch("t").unwrap();
        let Some(tree) = patched_tree(way, &pristine, scratch.path()) else {
            return;
        };
        assert_eq!(apply(&tree, &mbox, scratch.path()).unwrap().patches, 1);
        assert_eq!(
            tree.view.read_to_string("fs/open.c").unwrap(),
            "int a;\nint open_fast;\nint z;\n"
        );
    }

    #[test]
    fn a_message_without_its_from_line_applies_to_a_tarball_tree() {
        check_bare_message(tarball_pristine, Way::Copy);
    }

    #[test]
    fn a_message_without_its_from_line_applies_to_a_git_tree() {
        check_bare_message(git_pristine, Way::Copy);
    }

    #[test]
    fn a_message_without_its_from_line_applies_to_an_overlay_on_a_git_tree() {
        check_bare_message(git_pristine, Way::Overlay);
    }

    #[test]
    fn a_plain_diff_is_refused_as_the_server_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("plain.diff");
        let bare = bare_message();
        let plain = &bare[bare.find("diff --git ").unwrap()..];
        std::fs::write(&mbox, plain).unwrap();
        let server = patchperf_common::mbox::parse(plain)
            .unwrap_err()
            .to_string();
        match split_mbox(&mbox, &dir.path().join("split")) {
            Err(ApplyError::DoesNotApply { detail, .. }) => assert_eq!(detail, server),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_mbox_without_diffs_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("empty.mbox");
        std::fs::write(
            &mbox,
            "From x Mon Sep 17 00:00:00 2001\nSubject: hi\n\nno diff\n",
        )
        .unwrap();
        let cache = Cache::at(dir.path().join("cache"));
        let lock = cache.lock().unwrap();
        let pristine = tarball_pristine(dir.path(), &lock, "int a;\n");
        let scratch = lock.scratch("t").unwrap();
        let tree = Tree::copy_of(&pristine, &scratch.path().join("linux")).unwrap();
        assert_eq!(
            apply(&tree, &mbox, scratch.path()),
            Err(ApplyError::NoPatches)
        );
    }
}
