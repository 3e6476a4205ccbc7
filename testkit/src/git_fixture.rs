//! A real linux git history for the tests of ranges, bisection, tracked
//! trees and lists: Debian's linux-source-6.1 committed as one commit, then
//! steps on top of it (a seed patch from `examples/patches/` put on with
//! `git am`, or a harmless edit), in a bare repository that runners clone
//! like any other.
//!
//! Every author, committer and date is fixed, so a history has the same
//! commit ids on every machine. All histories live in one repository in
//! the kernel tests' cache ([`cache_dir`]): `master` is the tarball's
//! commit and each list of steps is a branch of its own. One URL for every
//! kernel test means one runner mirror, one checkout of each base commit
//! and one base build, however many tests use it. The tarball's commit is
//! streamed from the tarball into `git fast-import` (no unpacked copy, no
//! repack: ~30 s where unpack, `git add` and `git repack` took ~2.5 min), built
//! in a temporary directory and renamed into place; branches are added
//! under the same flock, so test processes running side by side build
//! each once and never see half of one.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use patchperf_common::digest::sha256_hex;

use crate::test_cache::cache_dir;

/// Debian's kernel source package.
pub const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// Who commits the tarball and the edits, and commits every patch `git am`
/// puts on (the patches keep their own authors).
const IDENTITY: (&str, &str) = ("patchperf test history", "history@patchperf.invalid");

/// The first commit's date (2026-09-21; any fixed time would do). Step n
/// is committed `n` minutes later.
const BASE_TIME: i64 = 1_790_000_000;

/// Bumped when the way a history is built changes, so cached histories
/// built the old way are not used. (Format 1 gave the tarball's commit
/// the same tree and id; it kept one repository per history.)
const FORMAT: &str = "patchperf git fixture 2";

/// One commit on top of the tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `git am` of `examples/patches/<file name>`.
    Patch(String),
    /// Appends `text` to the file `path` (relative to the tree's top) and
    /// commits it as `subject`: a change that builds the same kernel, such
    /// as a comment.
    Append {
        /// The file.
        path: String,
        /// What is appended, as is.
        text: String,
        /// The commit's subject.
        subject: String,
    },
}

impl Step {
    /// `git am` of the seed patch whose file name starts with `prefix`
    /// (`"003"`).
    pub fn seed(prefix: &str) -> Step {
        let dir = patches_dir();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(prefix) && name.ends_with(".patch"))
            .collect();
        assert_eq!(names.len(), 1, "seed patches starting with {prefix}");
        Step::Patch(names.remove(0))
    }

    /// What identifies the step in the cache key: the patch's bytes, or
    /// the edit.
    fn key(&self) -> String {
        match self {
            Step::Patch(name) => {
                let text = std::fs::read(patches_dir().join(name))
                    .unwrap_or_else(|e| panic!("reading seed patch {name}: {e}"));
                format!("patch {name} sha256:{}", sha256_hex(&text))
            }
            Step::Append {
                path,
                text,
                subject,
            } => format!("append {path:?} {text:?} {subject:?}"),
        }
    }

    /// The files the step changes, relative to the tree's top.
    fn paths(&self) -> Vec<String> {
        match self {
            Step::Append { path, .. } => vec![path.clone()],
            Step::Patch(name) => {
                let patch = patches_dir().join(name);
                let numstat = run(Command::new("git")
                    .args(["apply", "--numstat"])
                    .arg(&patch)
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_CONFIG_NOSYSTEM", "1"));
                numstat
                    .lines()
                    .map(|line| {
                        let path = line.splitn(3, '\t').nth(2).unwrap_or_default();
                        assert!(
                            !path.is_empty() && !path.contains(" => "),
                            "{name}: a rename or an unreadable path in {line:?}"
                        );
                        path.to_string()
                    })
                    .collect()
            }
        }
    }
}

/// One commit of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Full commit id.
    pub sha: String,
    /// Its subject line, as `git log --format=%s` prints it.
    pub subject: String,
}

/// A history in the cache, ready to clone.
#[derive(Debug, Clone)]
pub struct LinuxHistory {
    /// The bare repository every history shares (`master` is the
    /// tarball's commit).
    pub dir: PathBuf,
    /// The branch whose first-parent line is this history (`master` for
    /// one of no steps).
    pub branch: String,
    /// The tarball's commit.
    pub base: Commit,
    /// One commit per step, in order.
    pub commits: Vec<Commit>,
}

impl LinuxHistory {
    /// The URL a runner clones it by (`file://`, so git packs objects as it
    /// would for a remote instead of hard-linking them).
    pub fn url(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    /// The last commit.
    pub fn head(&self) -> &Commit {
        self.commits.last().unwrap_or(&self.base)
    }

    /// `<base>..<head>`: every step's commit.
    pub fn range(&self) -> String {
        format!("{}..{}", self.base.sha, self.head().sha)
    }

    /// The first `n` steps' commits as a patch series (`git format-patch`
    /// of `<base>..<commit n>`, one message per commit); empty for 0.
    pub fn series(&self, n: usize) -> String {
        let Some(last) = n.checked_sub(1).map(|i| &self.commits[i]) else {
            return String::new();
        };
        let range = format!("{}..{}", self.base.sha, last.sha);
        git_output(
            &self.dir,
            None,
            0,
            ["format-patch", "--stdout", "--no-signature", &range],
        )
    }

    /// Points branch `name` of the shared repository at `sha`, as a
    /// maintainer's push would: a branch a test moves (a tracked tree's),
    /// never one of the histories'. The caller holds the kernel tests'
    /// cache (no other test reads the branch meanwhile).
    pub fn push(&self, name: &str, sha: &str) {
        assert!(
            name != "master" && !name.starts_with("history-"),
            "{name} is a history's branch"
        );
        git_output(
            &self.dir,
            None,
            0,
            ["update-ref", &format!("refs/heads/{name}"), sha],
        );
    }
}

/// Why a history cannot be built here (the test should skip), or `None`.
pub fn missing() -> Option<String> {
    if !Path::new(TARBALL).is_file() {
        return Some(format!(
            "{TARBALL} missing (apt-get install linux-source-6.1)"
        ));
    }
    for tool in ["git", "xz"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Some(format!("{tool} not installed"));
        }
    }
    None
}

/// The seed range of issue 14: the tarball, then seeds 002, 003 and 004.
/// `Err` is the reason to skip.
pub fn seed_range() -> Result<LinuxHistory, String> {
    linux_history(&[Step::seed("002"), Step::seed("003"), Step::seed("004")])
}

/// The history of the tarball with `steps` on top, from the cache or built
/// now (about a minute for the tarball's commit, a second a step). `Err`
/// is the reason to skip; a history that cannot be built (a patch that
/// does not apply) panics.
pub fn linux_history(steps: &[Step]) -> Result<LinuxHistory, String> {
    if let Some(why) = missing() {
        return Err(why);
    }
    let root = cache_dir().join("git-histories");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
    let dir = root.join(format!("linux-{}.git", &base_key()[..16]));
    let branch = branch_of(steps);
    {
        let lock = std::fs::File::create(root.join("lock")).unwrap();
        let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .unwrap();
        remove_stale(&root, &dir);
        if !dir.join("HEAD").is_file() {
            build_base(&root, &dir, Path::new(TARBALL));
        }
        if !has_branch(&dir, &branch) {
            add_steps(&dir, &branch, steps);
        }
    }
    Ok(read_back(&dir, &branch, steps.len()))
}

/// The branch of the history of `steps`: `master` for none.
fn branch_of(steps: &[Step]) -> String {
    if steps.is_empty() {
        return "master".to_string();
    }
    let mut key = format!("{FORMAT}\n");
    for step in steps {
        key.push_str(&step.key());
        key.push('\n');
    }
    format!("history-{}", &sha256_hex(key.as_bytes())[..16])
}

fn has_branch(dir: &Path, branch: &str) -> bool {
    Command::new("git")
        .env("GIT_DIR", dir)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Removes what `root` holds besides the repository `keep`: temporary
/// directories of builds that were killed, and repositories of another
/// tarball or an older format (one per history, 0.5 GB each). Runners'
/// mirrors of them go at their next prune, their source being gone.
fn remove_stale(root: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path != keep && (name.starts_with(".build-") || name.ends_with(".git")) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// The history of `steps` on `branch` of the repository `dir`.
fn read_back(dir: &Path, branch: &str, steps: usize) -> LinuxHistory {
    let log = git_output(
        dir,
        None,
        0,
        [
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H %s",
            &format!("refs/heads/{branch}"),
        ],
    );
    let mut commits = log.lines().map(|line| {
        let (sha, subject) = line.split_once(' ').unwrap_or((line, ""));
        Commit {
            sha: sha.to_string(),
            subject: subject.to_string(),
        }
    });
    let base = commits.next().expect("the tarball's commit");
    let commits: Vec<Commit> = commits.collect();
    assert_eq!(commits.len(), steps, "{} {branch}: {log}", dir.display());
    LinuxHistory {
        dir: dir.to_path_buf(),
        branch: branch.to_string(),
        base,
        commits,
    }
}

/// The cache key of the shared repository: how it is built and the
/// tarball (by name, size and mtime; a new Debian upload is a new
/// repository).
fn base_key() -> String {
    let meta = std::fs::metadata(TARBALL).unwrap();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    sha256_hex(format!("{FORMAT}\n{TARBALL} {} {mtime}\n", meta.len()).as_bytes())
}

/// Commits the tarball as `master` of a new bare repository in a
/// temporary directory under `root`, then renames it to `dir`.
fn build_base(root: &Path, dir: &Path, tarball: &Path) {
    let started = std::time::Instant::now();
    eprintln!("building the git history {}", dir.display());
    let tmp = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(root)
        .unwrap();
    let bare = tmp.path().join("repo.git");
    run(Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=master"])
        .arg(&bare));
    import_tarball(&bare, tarball);
    std::fs::rename(&bare, dir)
        .unwrap_or_else(|e| panic!("moving the history to {}: {e}", dir.display()));
    eprintln!(
        "built the tarball's commit of {} in {:.0} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
}

/// Streams the tarball's files into `git fast-import` as one commit on
/// `master`: the tree `git add --force --all` of the unpacked tarball
/// would make (ignored files too: Debian's tarball carries a .gitignore),
/// without writing the 1.4 GB out first.
fn import_tarball(bare: &Path, tarball: &Path) {
    let mut xz = Command::new("xz")
        .arg("-dc")
        .arg(tarball)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running xz: {e}"));
    // No deltas (fast-import tries each blob against the one before it,
    // unrelated files here: 3 MB saved of 248) and zlib's fastest level
    // (292 MB instead of 248): the import's 59 s become 27.
    let mut import = git_command(
        bare,
        None,
        0,
        [
            "-c",
            "pack.compression=1",
            "fast-import",
            "--depth=0",
            "--quiet",
            "--done",
        ],
    );
    let mut import = import
        .stdin(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running git fast-import: {e}"));
    let mut stream = BufWriter::with_capacity(1 << 20, import.stdin.take().unwrap());
    let mut archive = tar::Archive::new(xz.stdout.take().unwrap());
    // Path in the tree → (mode, mark); a hard link's target is an earlier
    // entry.
    let mut files: Vec<(String, &str, usize)> = Vec::new();
    let mut marks: HashMap<String, usize> = HashMap::new();
    let mut makefile = None;
    let mut top: Option<String> = None;
    let mut data = Vec::new();
    for entry in archive.entries().expect("reading the tarball") {
        let mut entry = entry.expect("reading the tarball");
        let full = entry
            .path()
            .expect("a tarball path")
            .to_string_lossy()
            .into_owned();
        let (first, path) = full.split_once('/').unwrap_or((full.as_str(), ""));
        match &top {
            None => top = Some(first.to_string()),
            Some(t) => assert_eq!(
                t,
                first,
                "{} holds more than one top directory",
                tarball.display()
            ),
        }
        let path = path.trim_end_matches('/').to_string();
        let kind = entry.header().entry_type();
        if path.is_empty() || kind.is_dir() {
            continue;
        }
        assert!(
            !path.contains('\n') && !path.starts_with('"'),
            "a path fast-import would need quoted: {path:?}"
        );
        let mode = entry.header().mode().expect("a tarball mode");
        let (git_mode, bytes) = if kind.is_symlink() {
            let target = entry
                .link_name()
                .expect("a link target")
                .expect("a link target");
            ("120000", target.to_string_lossy().into_owned().into_bytes())
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .expect("a link target")
                .expect("a link target");
            let target = target.to_string_lossy();
            let target = target.split_once('/').map_or("", |(_, p)| p);
            let mark = marks[target];
            let git_mode = if mode & 0o100 != 0 {
                "100755"
            } else {
                "100644"
            };
            marks.insert(path.clone(), mark);
            files.push((path, git_mode, mark));
            continue;
        } else if kind.is_file() {
            data.clear();
            entry.read_to_end(&mut data).expect("reading the tarball");
            let git_mode = if mode & 0o100 != 0 {
                "100755"
            } else {
                "100644"
            };
            (git_mode, std::mem::take(&mut data))
        } else {
            panic!("{path}: an entry git would not commit ({kind:?})");
        };
        if path == "Makefile" {
            makefile = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        let mark = files.len() + 1;
        write!(stream, "blob\nmark :{mark}\ndata {}\n", bytes.len()).unwrap();
        stream.write_all(&bytes).unwrap();
        stream.write_all(b"\n").unwrap();
        marks.insert(path.clone(), mark);
        files.push((path, git_mode, mark));
        data = bytes;
    }
    let release = kernel_release(&makefile.expect("a top-level Makefile in the tarball"));
    let message = format!("Linux {release} from Debian's linux-source-6.1\n");
    let who = format!("{} <{}> {BASE_TIME} +0000", IDENTITY.0, IDENTITY.1);
    write!(
        stream,
        "commit refs/heads/master\nauthor {who}\ncommitter {who}\ndata {}\n{message}",
        message.len()
    )
    .unwrap();
    for (path, mode, mark) in &files {
        writeln!(stream, "M {mode} :{mark} {path}").unwrap();
    }
    stream.write_all(b"\ndone\n").unwrap();
    drop(stream.into_inner().map_err(|e| e.into_error()).unwrap());
    let xz_status = xz.wait().unwrap();
    let import_status = import.wait().unwrap();
    assert!(
        xz_status.success(),
        "xz -dc {}: {xz_status}",
        tarball.display()
    );
    assert!(import_status.success(), "git fast-import: {import_status}");
}

/// Commits `steps` on the tarball's commit and points `branch` at the
/// last, in a worktree of `dir` holding only the files the steps change
/// (the index holds the whole tree, so each commit does).
fn add_steps(dir: &Path, branch: &str, steps: &[Step]) {
    let started = std::time::Instant::now();
    let root = dir.parent().expect("the repository's folder");
    let scratch = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(root)
        .unwrap();
    let tree = scratch.path().join("tree");
    git_output(dir, None, 0, ["worktree", "prune"]);
    git_output(
        dir,
        None,
        0,
        [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("--detach"),
            OsStr::new("--no-checkout"),
            tree.as_os_str(),
            OsStr::new("master"),
        ],
    );
    // The worktree's own HEAD and index live in the folder its `.git`
    // file names.
    let link = std::fs::read_to_string(tree.join(".git")).unwrap();
    let admin = PathBuf::from(
        link.trim()
            .strip_prefix("gitdir: ")
            .unwrap_or_else(|| panic!("a worktree's .git file: {link:?}")),
    );
    git_output(&admin, Some(&tree), 0, ["read-tree", "HEAD"]);
    for (n, step) in steps.iter().enumerate() {
        let minutes = n as i64 + 1;
        let mut checkout = vec!["checkout-index".to_string(), "--".to_string()];
        checkout.extend(step.paths());
        git_output(&admin, Some(&tree), 0, &checkout);
        match step {
            Step::Patch(name) => {
                let patch = patches_dir().join(name);
                git_output(
                    &admin,
                    Some(&tree),
                    minutes,
                    [
                        OsStr::new("am"),
                        OsStr::new("--quiet"),
                        OsStr::new("--no-3way"),
                        patch.as_os_str(),
                    ],
                );
            }
            Step::Append {
                path,
                text,
                subject,
            } => {
                let file = tree.join(path);
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .and_then(|mut f| f.write_all(text.as_bytes()))
                    .unwrap_or_else(|e| panic!("appending to {}: {e}", file.display()));
                git_output(&admin, Some(&tree), minutes, ["add", "--force", "--", path]);
                git_output(
                    &admin,
                    Some(&tree),
                    minutes,
                    ["commit", "--quiet", "--no-verify", "-m", subject],
                );
            }
        }
    }
    git_output(
        &admin,
        Some(&tree),
        0,
        ["update-ref", &format!("refs/heads/{branch}"), "HEAD"],
    );
    git_output(
        dir,
        None,
        0,
        [
            OsStr::new("worktree"),
            OsStr::new("remove"),
            OsStr::new("--force"),
            tree.as_os_str(),
        ],
    );
    eprintln!(
        "added the history {branch} ({} steps) to {} in {:.1} s",
        steps.len(),
        dir.display(),
        started.elapsed().as_secs_f64()
    );
}

/// `VERSION.PATCHLEVEL.SUBLEVEL` from the top-level Makefile's text.
fn kernel_release(makefile: &str) -> String {
    let field = |name: &str| {
        makefile
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .trim()
                    .strip_prefix('=')
                    .map(str::trim)
            })
            .unwrap_or_else(|| panic!("no {name} in the top-level Makefile"))
            .to_string()
    };
    format!(
        "{}.{}.{}",
        field("VERSION"),
        field("PATCHLEVEL"),
        field("SUBLEVEL")
    )
}

/// The folder holding the seed patches.
pub fn patches_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/patches")
}

/// `git` on the repository `git_dir` (with `work_tree`, run in it), blind to
/// the user's and the system's configuration, as the fixed identity at
/// [`BASE_TIME`] plus `minutes`; its stdout. Panics with git's words when
/// it fails.
fn git_output<I, S>(git_dir: &Path, work_tree: Option<&Path>, minutes: i64, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run(&mut git_command(git_dir, work_tree, minutes, args))
}

/// The command [`git_output`] runs.
fn git_command<I, S>(git_dir: &Path, work_tree: Option<&Path>, minutes: i64, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let date = format!("@{} +0000", BASE_TIME + 60 * minutes);
    let mut cmd = Command::new("git");
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_DIR", git_dir)
        .env("GIT_AUTHOR_NAME", IDENTITY.0)
        .env("GIT_AUTHOR_EMAIL", IDENTITY.1)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_NAME", IDENTITY.0)
        .env("GIT_COMMITTER_EMAIL", IDENTITY.1)
        .env("GIT_COMMITTER_DATE", &date)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .args(args);
    if let Some(tree) = work_tree {
        cmd.env("GIT_WORK_TREE", tree).current_dir(tree);
    }
    cmd
}

/// Runs `cmd`; its stdout, or a panic with its stderr.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small tarball shaped like Debian's: one top directory, a
    /// Makefile naming the release, an executable, a symbolic and a hard
    /// link, a .gitignore.
    fn small_tarball(dir: &Path) -> PathBuf {
        let tar = dir.join("linux-source-6.1.tar");
        let mut b = tar::Builder::new(std::fs::File::create(&tar).unwrap());
        let mut add = |path: &str, kind: tar::EntryType, mode: u32, body: &[u8], link: &str| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(mode);
            h.set_mtime(1_700_000_000);
            h.set_size(body.len() as u64);
            if !link.is_empty() {
                h.set_link_name(link).unwrap();
            }
            b.append_data(&mut h, format!("linux-source-6.1/{path}"), body)
                .unwrap();
        };
        let file = tar::EntryType::Regular;
        add("", tar::EntryType::Directory, 0o755, b"", "");
        add(
            "Makefile",
            file,
            0o644,
            b"VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 999\nEXTRAVERSION =\n",
            "",
        );
        add(".gitignore", file, 0o644, b"*.o\n", "");
        add("scripts/", tar::EntryType::Directory, 0o755, b"", "");
        add("scripts/run.sh", file, 0o755, b"#!/bin/sh\ntrue\n", "");
        add("scripts/run", tar::EntryType::Symlink, 0o777, b"", "run.sh");
        add("fs/stat.c", file, 0o644, b"/* stat */\n", "");
        add(
            "fs/stat-again.c",
            tar::EntryType::Link,
            0o644,
            b"",
            "linux-source-6.1/fs/stat.c",
        );
        b.into_inner().unwrap();
        run(Command::new("xz").arg(&tar));
        dir.join("linux-source-6.1.tar.xz")
    }

    /// A tarball imported twice, in two directories, is one commit: the
    /// same id, and the id plain git gives the tarball unpacked, added with
    /// `git add --force --all` and committed with the fixture's identity
    /// and date (so any machine's git gives it too); the subject names the
    /// release, modes and links are as `git add` commits them.
    #[test]
    fn a_tarball_is_the_same_commit_wherever_it_is_imported() {
        if let Some(why) = missing() {
            eprintln!("SKIPPED: {why}");
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        let tarball = small_tarball(scratch.path());
        let mut ids = Vec::new();
        for k in 0..2 {
            let root = scratch.path().join(format!("root-{k}"));
            std::fs::create_dir(&root).unwrap();
            let dir = root.join("history.git");
            build_base(&root, &dir, &tarball);
            ids.push(git_output(&dir, None, 0, ["rev-parse", "master"]));
        }
        assert_eq!(ids[0], ids[1]);
        let dir = scratch.path().join("root-0/history.git");
        let subject = git_output(&dir, None, 0, ["log", "-1", "--format=%s", "master"]);
        assert_eq!(
            subject.trim(),
            "Linux 6.1.999 from Debian's linux-source-6.1"
        );
        let tree = git_output(&dir, None, 0, ["ls-tree", "-r", "master"]);
        let entry = |path: &str| {
            tree.lines()
                .find(|l| l.ends_with(&format!("\t{path}")))
                .unwrap_or_else(|| panic!("{path} not in\n{tree}"))
                .split([' ', '\t'])
                .take(3)
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(entry("scripts/run.sh")[0], "100755");
        assert_eq!(entry("scripts/run")[0], "120000");
        assert_eq!(entry("Makefile")[0], "100644");
        assert_eq!(entry("fs/stat-again.c"), entry("fs/stat.c"));
        assert_eq!(tree.lines().count(), 6, "{tree}");
        assert_eq!(ids[0], by_hand(scratch.path(), &tarball));
    }

    /// The commit of `tarball` unpacked, added with `git add --force
    /// --all` and committed with the fixture's identity, date and message.
    fn by_hand(scratch: &Path, tarball: &Path) -> String {
        let tree = scratch.join("unpacked");
        std::fs::create_dir(&tree).unwrap();
        run(Command::new("tar")
            .args(["-xJf"])
            .arg(tarball)
            .args(["--strip-components=1", "-C"])
            .arg(&tree));
        // The fixture's identity and date, as `git am` and the edits get
        // them, with a repository outside the tree.
        let repo = scratch.join("by-hand.git");
        let git = |args: &[&str]| git_output(&repo, Some(&tree), 0, args);
        git(&["init", "--quiet"]);
        git(&["add", "--force", "--all"]);
        git(&[
            "commit",
            "--quiet",
            "--cleanup=verbatim",
            "-m",
            "Linux 6.1.999 from Debian's linux-source-6.1",
        ]);
        git(&["rev-parse", "HEAD"])
    }

    /// The seed range built twice, into the cache (unless it is there
    /// already) and, with a comment edit on top, over a copy of the
    /// cache's tarball commit in a directory of its own: the same commit
    /// ids, the seeds in order on the first-parent line, the edit one
    /// commit touching its one file, and every commit holding the whole
    /// tree, committed as the unpacked tarball would be.
    #[test]
    fn the_seed_range_has_the_same_commits_wherever_it_is_built() {
        let cached = match seed_range() {
            Ok(history) => history,
            Err(why) => {
                eprintln!("SKIPPED: {why}");
                return;
            }
        };
        let elsewhere = tempfile::tempdir().unwrap();
        let dir = elsewhere.path().join("history.git");
        // The tarball's commit is imported once (its import is tested
        // above on a small tarball): a shared clone of it, so the steps
        // are put on in a repository of their own.
        run(Command::new("git")
            .args(["clone", "--quiet", "--bare", "--shared", "--single-branch"])
            .args(["--branch", "master"])
            .arg(&cached.dir)
            .arg(&dir));
        let edit = Step::Append {
            path: "fs/stat.c".into(),
            text: "/* patchperf: a comment, nothing else */\n".into(),
            subject: "fs/stat.c: a comment".into(),
        };
        let steps = [
            Step::seed("002"),
            Step::seed("003"),
            Step::seed("004"),
            edit,
        ];
        let branch = branch_of(&steps);
        add_steps(&dir, &branch, &steps);
        let fresh = read_back(&dir, &branch, steps.len());
        assert_eq!(fresh.base, cached.base);
        assert_eq!(fresh.commits[..3], cached.commits);
        assert_eq!(cached.branch, branch_of(&steps[..3]));
        assert!(
            cached
                .base
                .subject
                .ends_with(" from Debian's linux-source-6.1"),
            "{:?}",
            cached.base
        );
        assert!(
            cached.base.subject.starts_with("Linux 6.1."),
            "{:?}",
            cached.base
        );
        let subjects: Vec<&str> = fresh.commits.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "fs: use __fput_sync in close(2)",
                "vfs: mostly undo glibc turning 'fstat()' into 'fstatat(AT_EMPTY_PATH)'",
                "fs/file.c: remove sanity_check and add likely/unlikely in alloc_fd()",
                "fs/stat.c: a comment",
            ]
        );
        let edited = git_output(
            &dir,
            None,
            0,
            [
                "diff",
                "--numstat",
                &cached.head().sha,
                &fresh.commits[3].sha,
            ],
        );
        assert_eq!(edited, "1\t0\tfs/stat.c\n");
        // Each step changed its files only: the tree is whole at the end.
        let count = |sha: &str| {
            git_output(&dir, None, 0, ["ls-tree", "-r", "--name-only", sha])
                .lines()
                .count()
        };
        let files = count(&fresh.base.sha);
        assert!(files > 70_000, "{files} files in the tarball's commit");
        assert_eq!(count(&fresh.head().sha), files);
        // The tree the unpacked tarball gives `git add --force --all`:
        // executable scripts keep their mode, symbolic links are links.
        let mode = |path: &str| {
            git_output(&dir, None, 0, ["ls-tree", &fresh.base.sha, path])
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(mode("scripts/checkpatch.pl"), "100755");
        assert_eq!(mode("Makefile"), "100644");
        for c in &fresh.commits {
            eprintln!("{} {}", c.sha, c.subject);
        }
        eprintln!("base {} {}", cached.base.sha, cached.base.subject);
    }
}
