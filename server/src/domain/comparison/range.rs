//! A git range `A..B` read into what a per-patch comparison measures: the
//! commits on B's first-parent line after A, oldest first, each as one mbox
//! message (`git log --pretty=email` for its headers and message, then its
//! diff against its first parent, so a merge is one step carrying what it
//! brought in). The runner applies them with git (`git apply` patch by
//! patch in an overlay on A's worktree, `git am` on a copy of it), so step
//! k's patched tree is commit k's tree, and a kernel built for a commit is
//! found in the runner's cache by every later comparison or bisection
//! over the same range (the mbox prefixes are written one way).

use patchperf_common::api::git::parse_range;
use patchperf_common::mail_header::{self, NameAddr};
use patchperf_common::mbox;

use crate::Error;
use crate::domain::Context;
use crate::git::{self, Mirror};

/// Most commits a range is read with: a per-patch comparison measures up
/// to `mbox::prefix::MAX_STEPS` of them (the submission says so), a
/// bisection needs 1 + log2 of this many probes. Each commit costs three
/// git commands to read.
pub const MAX_COMMITS: usize = 2000;

/// Most bytes of what `git log` prints about one commit (subject, author,
/// date).
const MAX_ABOUT: usize = 64 << 10;

/// One commit of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeCommit {
    /// Full object id.
    pub sha: String,
    /// Its subject line.
    pub subject: String,
    /// Its author, `Name <address>`.
    pub author: String,
    /// When it was committed, seconds since the epoch.
    pub committed_at: Option<i64>,
}

/// A range as read from the repository.
#[derive(Debug, Clone)]
pub struct Range {
    /// A, resolved to its full id: the base every step builds on.
    pub from: String,
    /// B, resolved.
    pub to: String,
    /// The commits measured, oldest first: one per message of `mbox`.
    pub commits: Vec<RangeCommit>,
    /// Commits of the range left out because they change no file (git am
    /// cannot apply an empty patch, and there is nothing to measure).
    pub empty: Vec<RangeCommit>,
    /// The commits as a series, one message each.
    pub mbox: String,
}

impl Range {
    /// `A..B` with full ids, as stored.
    pub fn spelled(&self) -> String {
        format!("{}..{}", self.from, self.to)
    }
}

/// Reads `range` (`A..B`) of the repository at `url`. Refuses, saying why:
/// an end the repository lacks, an A not on B's first-parent line (its
/// commits would not apply to A), an empty range, more than
/// [`MAX_COMMITS`] commits, or commits whose patches together exceed
/// `max_bytes` (naming the commit where they do). A mirror cloned for a
/// range that is refused is not kept.
pub async fn read(ctx: &Context, url: &str, range: &str, max_bytes: usize) -> Result<Range, Error> {
    let (from, to) = parse_range(range)
        .map_err(|why| Error::Invalid(format!("range {range:?} is not `A..B`: {why}")))?;
    let mut mirror = ctx.git.open(url, &[from, to]).await?;
    let of_range = |e: Error| in_words(e, &format!("range {range:?} of {url}"));
    let from = mirror.resolve(from).await.map_err(of_range)?;
    let to = mirror.resolve(to).await.map_err(of_range)?;
    let line = first_parent_line(&mirror, &from, &to)
        .await
        .map_err(of_range)?;
    if line.is_empty() {
        return Err(of_range(Error::Invalid(format!(
            "it has no commits: `{to}` is `{from}` or one of its ancestors"
        ))));
    }
    let mut range = Range {
        from,
        to,
        commits: Vec::new(),
        empty: Vec::new(),
        mbox: String::new(),
    };
    for sha in line {
        let left = max_bytes.saturating_sub(range.mbox.len());
        let (about, message) = message(&mirror, &sha, left).await.map_err(|e| match e {
            Error::TooLarge(m) => Error::TooLarge(format!(
                "range {}: {m}; its commits' patches may take {} together",
                range.spelled(),
                git::bytes(max_bytes)
            )),
            e => in_words(e, &format!("range {}", range.spelled())),
        })?;
        let commit = RangeCommit {
            sha,
            subject: about.subject,
            author: about.author,
            committed_at: about.committed_at,
        };
        match message {
            Some(text) => {
                range.mbox.push_str(&text);
                range.commits.push(commit);
            }
            None => range.empty.push(commit),
        }
    }
    let unknown = |why: String| Error::Invalid(format!("range {range:?} of {url}: {why}"));
    if range.commits.is_empty() {
        return Err(unknown("none of its commits changes a file".into()));
    }
    // What the runner will split and apply must read back as these commits.
    let series = mbox::parse(&range.mbox).map_err(|e| unknown(e.to_string()))?;
    let patches = series.messages.iter().filter(|m| m.has_diff).count();
    if patches != range.commits.len() {
        return Err(Error::Internal(format!(
            "range {}: {} commits became {patches} patches",
            range.spelled(),
            range.commits.len()
        )));
    }
    mirror.keep();
    Ok(range)
}

/// `e` with `context` before its words, its kind kept.
fn in_words(e: Error, context: &str) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(format!("{context}: {m}")),
        Error::TooLarge(m) => Error::TooLarge(format!("{context}: {m}")),
        other => other,
    }
}

/// The commit `branch` of the repository at `url` is at now (the remote
/// asked first), with what it is about.
pub async fn head(ctx: &Context, url: &str, branch: &str) -> Result<RangeCommit, Error> {
    let mut mirror = ctx.git.open(url, &[branch]).await?;
    let sha = mirror
        .resolve(branch)
        .await
        .map_err(|e| in_words(e, &format!("branch {branch:?} of {url}")))?;
    let about = about(&mirror, &sha)
        .await
        .map_err(|e| in_words(e, &format!("the head of {branch:?} of {url}")))?;
    mirror.keep();
    Ok(RangeCommit {
        sha,
        subject: about.subject,
        author: about.author,
        committed_at: about.committed_at,
    })
}

/// Where a rewritten branch left `tested`: `None` when `tested` is still an
/// ancestor of `head` (the branch moved on), else the merge base of the
/// two, with what it is about. Refused when the two share no history.
pub async fn fork_point(
    ctx: &Context,
    url: &str,
    tested: &str,
    head: &str,
) -> Result<Option<RangeCommit>, Error> {
    let mirror = ctx.git.open(url, &[tested, head]).await?;
    let base = mirror
        .git(
            &["merge-base", "--end-of-options", tested, head],
            200,
            "the merge base",
        )
        .await
        .map_err(|e| {
            in_words(
                e,
                &format!("the last tested {tested} and the new head {head} share no history"),
            )
        })?;
    let base = base.trim().to_string();
    if base == tested {
        return Ok(None);
    }
    let about = about(&mirror, &base)
        .await
        .map_err(|e| in_words(e, &format!("the merge base {base}")))?;
    Ok(Some(RangeCommit {
        sha: base,
        subject: about.subject,
        author: about.author,
        committed_at: about.committed_at,
    }))
}

/// The commits on `to`'s first-parent line after `from`, oldest first;
/// refused when `from` is not on that line or there are more than
/// [`MAX_COMMITS`].
async fn first_parent_line(mirror: &Mirror, from: &str, to: &str) -> Result<Vec<String>, Error> {
    let spec = format!("{from}..{to}");
    // Newest first, one more than allowed: enough to tell it is too many.
    let count = format!("--max-count={}", MAX_COMMITS + 1);
    let out = mirror
        .git(
            &["rev-list", "--first-parent", "--parents", &count, &spec],
            4 << 20,
            "the list of its commits",
        )
        .await?;
    let mut rows: Vec<Vec<&str>> = out
        .lines()
        .map(|row| row.split_whitespace().collect())
        .filter(|ids: &Vec<&str>| !ids.is_empty())
        .collect();
    if rows.len() > MAX_COMMITS {
        return Err(Error::Invalid(format!(
            "it has more than {MAX_COMMITS} commits, the most a range is read with; \
             name a shorter one"
        )));
    }
    rows.reverse();
    let mut line: Vec<String> = Vec::new();
    for ids in rows {
        let (sha, first_parent) = (ids[0], ids.get(1).copied());
        let expected = line.last().map_or(from, String::as_str);
        if first_parent != Some(expected) {
            return Err(Error::Invalid(format!(
                "`{from}` is not on the first-parent line of `{to}` (commit {sha} follows {}), \
                 so its commits do not apply to it one after another",
                first_parent.unwrap_or("no parent")
            )));
        }
        line.push(sha.to_string());
    }
    Ok(line)
}

/// What a commit's history entry says of it.
struct About {
    subject: String,
    author: String,
    committed_at: Option<i64>,
}

/// What commit `sha` is about: subject, author and commit time, each made
/// fit for a mail header and a page when read (a name or subject from a
/// repository may hold anything, a bare CR included).
async fn about(mirror: &Mirror, sha: &str) -> Result<About, Error> {
    let text = mirror
        .git(
            &[
                "log",
                "-1",
                "--pretty=format:%s%x00%an%x00%ae%x00%ct",
                "--end-of-options",
                sha,
            ],
            MAX_ABOUT,
            &format!("what commit {sha} says of itself (subject, author, date)"),
        )
        .await?;
    let mut fields = text.split('\0');
    let subject = fields.next().unwrap_or_default();
    let (name, address) = (
        fields.next().unwrap_or_default(),
        fields.next().unwrap_or_default(),
    );
    Ok(About {
        subject: mail_header::subject(subject),
        author: NameAddr::from_repository(name, address).header(),
        committed_at: fields.next().and_then(|t| t.trim().parse().ok()),
    })
}

/// Commit `sha` as one mbox message with what it is about, or `None` for a
/// commit that changes nothing; at most `limit` bytes.
async fn message(
    mirror: &Mirror,
    sha: &str,
    limit: usize,
) -> Result<(About, Option<String>), Error> {
    let head = mirror
        .git(
            &[
                "log",
                "-1",
                "--pretty=email",
                "--no-notes",
                "--end-of-options",
                sha,
            ],
            limit,
            &format!("commit {sha}'s message with the commits before it"),
        )
        .await?;
    let about = about(mirror, sha).await?;
    let parent = format!("{sha}^1");
    let left = limit.saturating_sub(head.len());
    let diff = mirror
        .git(
            &[
                "diff",
                "--stat",
                "--summary",
                "--patch",
                "--binary",
                "--full-index",
                "--no-color",
                "--no-ext-diff",
                &parent,
                sha,
                "--",
            ],
            left,
            &format!("commit {sha}'s diff against its first parent with the commits before it"),
        )
        .await?;
    if !mbox::has_diff(&diff) {
        return Ok((about, None));
    }
    let mut text = head;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("---\n");
    text.push_str(&diff);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    // The next message's `From ` line separates only after a blank line.
    text.push('\n');
    Ok((about, Some(text)))
}
