//! `submit --range A..B` or `--commit C` without `--git`, run inside a
//! clone: a kernel developer's own branch, which the server cannot reach.
//! The client formats the commits itself (`git format-patch --base`, so
//! the mbox carries its `base-commit:`), finds the upstream the base
//! commit comes from (`--base-url`, else the remote of `A` when it is a
//! remote-tracking branch, else the current branch's upstream remote, else
//! the only remote) and sends base and patches: the server needs only the
//! upstream. A merge in the range is refused (format-patch cannot carry
//! one); `--git URL --range` has the server read such a range itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchperf_common::protocol::BaseSource;

use crate::Error;

/// Where the base commit is fetched from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseAt<'a> {
    /// The upstream that has it (for a server): this URL, else the one
    /// found as [`range`] says.
    Upstream(Option<&'a str>),
    /// This clone itself (for `runner job`, which builds here).
    ThisClone,
}

/// A local range made ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    /// The upstream at the range's merge base.
    pub base: BaseSource,
    /// The commits as `git format-patch --stdout --base` writes them.
    pub mbox: String,
    /// How many commits.
    pub commits: usize,
}

impl Local {
    /// `3 commits of this clone, on <base>`, as a command says what it
    /// took.
    pub fn summary(&self) -> String {
        format!(
            "{} commit{} of this clone, on {}",
            self.commits,
            if self.commits == 1 { "" } else { "s" },
            self.base.without_credentials().describe()
        )
    }
}

/// `git -C dir args`: its output, or a usage error with git's words.
fn git(dir: &Path, args: &[&str]) -> Result<String, Error> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| Error::Usage(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(Error::Usage(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8(out.stdout)
        .map(|s| s.trim_end().to_string())
        .map_err(|_| Error::Usage(format!("git {}: output is not UTF-8", args.join(" "))))
}

/// The top of the clone `dir` is in.
fn top(dir: &Path) -> Result<PathBuf, Error> {
    git(dir, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|_| {
            Error::Usage(format!(
                "{} is not inside a git clone: --range and --commit without --git read the \
                 current directory's commits (or name the repository with --git)",
                dir.display()
            ))
        })
}

/// The commits of `range` (`A..B`, `A..` for `A..HEAD`) in the clone
/// `dir` is in.
pub fn range(dir: &Path, range: &str, at: BaseAt<'_>) -> Result<Local, Error> {
    if range.contains("...") {
        return Err(Error::Usage(format!(
            "{range:?}: a symmetric range; name A..B (B's commits not in A)"
        )));
    }
    let Some((from, to)) = range.split_once("..") else {
        return Err(Error::Usage(format!("{range:?} is not a range A..B")));
    };
    let to = if to.is_empty() { "HEAD" } else { to };
    if from.is_empty() || from.starts_with('-') || to.starts_with('-') {
        return Err(Error::Usage(format!("{range:?} is not a range A..B")));
    }
    let top = top(dir)?;
    let commit = |name: &str| {
        git(
            &top,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{name}^{{commit}}"),
            ],
        )
    };
    let (a, b) = (commit(from)?, commit(to)?);
    let base = git(&top, &["merge-base", &a, &b])?;
    let url = base_url(&top, from, &base, at)?;
    series(&top, &base, &b, url)
}

/// The one commit `name` of the clone `dir` is in, on its parent.
pub fn commit(dir: &Path, name: &str, at: BaseAt<'_>) -> Result<Local, Error> {
    if name.starts_with('-') {
        return Err(Error::Usage(format!("{name:?} is not a commit")));
    }
    let top = top(dir)?;
    let c = git(
        &top,
        &[
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{name}^{{commit}}"),
        ],
    )?;
    let parent = git(&top, &["rev-parse", "--verify", &format!("{c}^1")])
        .map_err(|_| Error::Usage(format!("{name} has no parent to measure it against")))?;
    let url = base_url(&top, "", &parent, at)?;
    series(&top, &parent, &c, url)
}

/// The base and the patches of `base..tip`.
fn series(top: &Path, base: &str, tip: &str, url: String) -> Result<Local, Error> {
    let span = format!("{base}..{tip}");
    let merges = git(top, &["rev-list", "--merges", &span])?;
    if let Some(merge) = merges.lines().next() {
        return Err(Error::Usage(format!(
            "{span} holds a merge ({}), which a patch series cannot carry: have the server \
             read the range itself with --git URL --range",
            &merge[..merge.len().min(12)]
        )));
    }
    let commits: usize = git(top, &["rev-list", "--count", &span])?
        .parse()
        .map_err(|_| Error::Usage("git rev-list --count answered no number".into()))?;
    if commits == 0 {
        return Err(Error::Usage(format!(
            "{span} holds no commit: nothing to measure"
        )));
    }
    let mbox = git(
        top,
        &[
            "format-patch",
            "--stdout",
            "--no-color",
            &format!("--base={base}"),
            &span,
        ],
    )?;
    Ok(Local {
        base: BaseSource::Git {
            url,
            commit: base.to_string(),
        },
        mbox: mbox + "\n",
        commits,
    })
}

/// Where `base` is fetched from, as `at` says.
fn base_url(top: &Path, from: &str, base: &str, at: BaseAt<'_>) -> Result<String, Error> {
    match at {
        BaseAt::Upstream(url) => upstream(top, from, base, url),
        BaseAt::ThisClone => Ok(top.to_string_lossy().into_owned()),
    }
}

/// The URL of the upstream that has `base`: `base_url`, else the remote
/// `from` is a remote-tracking branch of (`origin/master`), else the
/// current branch's upstream remote, else the only remote.
fn upstream(top: &Path, from: &str, base: &str, base_url: Option<&str>) -> Result<String, Error> {
    if let Some(url) = base_url {
        return Ok(url.to_string());
    }
    let remotes = git(top, &["remote"])?;
    let remotes: Vec<&str> = remotes.lines().filter(|r| !r.is_empty()).collect();
    let url = |remote: &str| git(top, &["remote", "get-url", "--", remote]);
    if let Some((remote, _)) = from.split_once('/') {
        if remotes.contains(&remote) {
            return url(remote);
        }
    }
    if let Ok(tracking) = git(
        top,
        &[
            "rev-parse",
            "--abbrev-ref",
            "--symbolic-full-name",
            "@{upstream}",
        ],
    ) {
        if let Some((remote, _)) = tracking.split_once('/') {
            if remotes.contains(&remote) {
                return url(remote);
            }
        }
    }
    match remotes.as_slice() {
        [only] => url(only),
        _ => Err(Error::Usage(format!(
            "which upstream has the base commit {}? name it with --base-url URL (this clone has \
             {} remotes and the branch tracks none)",
            &base[..base.len().min(12)],
            remotes.len()
        ))),
    }
}
