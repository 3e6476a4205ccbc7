//! A real linux git history for the tests of ranges and bisection: Debian's
//! linux-source-6.1 committed as one commit, then steps on top of it (a
//! seed patch from `examples/patches/` put on with `git am`, or a harmless
//! edit), in a bare repository that runners clone like any other.
//!
//! Every author, committer and date is fixed, so a history has the same
//! commit ids on every machine. A history is built once per machine and
//! kept in the kernel tests' cache ([`cache_dir`]) under a hash of what it
//! commits; it is built in a temporary directory and renamed into place
//! under an flock, so test processes running side by side build it once
//! and never see half of it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

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
/// built the old way are not used.
const FORMAT: &str = "patchperf git fixture 1";

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
    /// The bare repository (branch `master` is the last step).
    pub dir: PathBuf,
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
}

/// Why a history cannot be built here (the test should skip), or `None`.
pub fn missing() -> Option<String> {
    if !Path::new(TARBALL).is_file() {
        return Some(format!(
            "{TARBALL} missing (apt-get install linux-source-6.1)"
        ));
    }
    if Command::new("git").arg("--version").output().is_err() {
        return Some("git not installed".to_string());
    }
    None
}

/// The seed range of issue 14: the tarball, then seeds 002, 003 and 004.
/// `Err` is the reason to skip.
pub fn seed_range() -> Result<LinuxHistory, String> {
    linux_history(&[Step::seed("002"), Step::seed("003"), Step::seed("004")])
}

/// The history of the tarball with `steps` on top, from the cache or built
/// now (a few minutes). `Err` is the reason to skip; a history that cannot
/// be built (a patch that does not apply) panics.
pub fn linux_history(steps: &[Step]) -> Result<LinuxHistory, String> {
    if let Some(why) = missing() {
        return Err(why);
    }
    let root = cache_dir().join("git-histories");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
    let dir = root.join(format!("{}.git", &history_key(steps)[..16]));
    {
        let lock = std::fs::File::create(root.join("lock")).unwrap();
        let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .unwrap();
        if !dir.join("HEAD").is_file() {
            build_into(&root, &dir, steps);
        }
    }
    Ok(read_back(&dir, steps.len()))
}

/// The history in the bare repository `dir`, whose first-parent line is
/// the tarball's commit and `steps` more.
fn read_back(dir: &Path, steps: usize) -> LinuxHistory {
    let log = git_output(
        dir,
        None,
        0,
        [
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H %s",
            "master",
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
    assert_eq!(commits.len(), steps, "{}: {log}", dir.display());
    LinuxHistory {
        dir: dir.to_path_buf(),
        base,
        commits,
    }
}

/// The cache key of a history: how it is built, the tarball (by name, size
/// and mtime; a new Debian upload is a new history) and each step.
fn history_key(steps: &[Step]) -> String {
    let meta = std::fs::metadata(TARBALL).unwrap();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let mut key = format!("{FORMAT}\n{TARBALL} {} {mtime}\n", meta.len());
    for step in steps {
        key.push_str(&step.key());
        key.push('\n');
    }
    sha256_hex(key.as_bytes())
}

/// Unpacks the tarball, commits it and the steps into a bare repository
/// in a temporary directory under `root`, packs it and renames it to `dir`.
fn build_into(root: &Path, dir: &Path, steps: &[Step]) {
    let started = std::time::Instant::now();
    eprintln!(
        "building the git history {} ({} steps)",
        dir.display(),
        steps.len()
    );
    let tmp = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(root)
        .unwrap();
    let unpacked = tmp.path().join("src");
    std::fs::create_dir(&unpacked).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(TARBALL)
        .arg("-C")
        .arg(&unpacked));
    let mut tops = std::fs::read_dir(&unpacked).unwrap();
    let tree = match (tops.next(), tops.next()) {
        (Some(top), None) => top.unwrap().path(),
        _ => panic!("{TARBALL} does not hold exactly one top directory"),
    };
    let bare = tmp.path().join("repo.git");
    run(Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=master"])
        .arg(&bare));

    // The whole tree, ignored files too: Debian's tarball carries a
    // .gitignore that would leave files out.
    git_output(&bare, Some(&tree), 0, ["add", "--force", "--all", "."]);
    let release = kernel_release(&tree);
    git_output(
        &bare,
        Some(&tree),
        0,
        [
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            &format!("Linux {release} from Debian's linux-source-6.1"),
        ],
    );
    for (n, step) in steps.iter().enumerate() {
        let minutes = n as i64 + 1;
        match step {
            Step::Patch(name) => {
                let patch = patches_dir().join(name);
                git_output(
                    &bare,
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
                use std::io::Write;
                let file = tree.join(path);
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .and_then(|mut f| f.write_all(text.as_bytes()))
                    .unwrap_or_else(|e| panic!("appending to {}: {e}", file.display()));
                git_output(&bare, Some(&tree), minutes, ["add", "--force", "--", path]);
                git_output(
                    &bare,
                    Some(&tree),
                    minutes,
                    ["commit", "--quiet", "--no-verify", "-m", subject],
                );
            }
        }
    }
    // One pack, so clones send it as it is instead of compressing 75,000
    // loose objects each time.
    git_output(&bare, None, 0, ["repack", "-a", "-d", "--quiet"]);
    std::fs::rename(&bare, dir)
        .unwrap_or_else(|e| panic!("moving the history to {}: {e}", dir.display()));
    eprintln!(
        "built the git history {} in {:.0} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
}

/// `VERSION.PATCHLEVEL.SUBLEVEL` from the tree's top-level Makefile.
fn kernel_release(tree: &Path) -> String {
    let makefile = std::fs::read_to_string(tree.join("Makefile")).unwrap();
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
    run(&mut cmd)
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

    /// The seed range built twice, into the cache (unless it is there
    /// already) and, with a comment edit on top, into a directory of its
    /// own: the same commit ids, the seeds in order on the first-parent
    /// line, and the edit one commit touching its one file.
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
        build_into(elsewhere.path(), &dir, &steps);
        let fresh = read_back(&dir, steps.len());
        assert_eq!(fresh.base, cached.base);
        assert_eq!(fresh.commits[..3], cached.commits);
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
        for c in &fresh.commits {
            eprintln!("{} {}", c.sha, c.subject);
        }
        eprintln!("base {} {}", cached.base.sha, cached.base.subject);
    }
}
