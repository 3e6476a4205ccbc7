//! What a comparison is called wherever it is named (the dashboard, the
//! listing API, its page, `report.txt`, mail subjects), in the words
//! kernel people use: a patch by its subject, a series by its cover
//! letter, a git range as `A..B (5 commits)`, a tracked tree's head as
//! `vfs.all 87d7add1d7 ("subject")`, an A/A comparison as the calibration
//! it is (`A/A calibration of open1 on lab-1 (tcg-icount)`); and a failed
//! comparison's failure: which of its jobs tells why, said in a line with
//! the lines of its detail behind it (the rejected hunk, the panic).

use serde::{Deserialize, Serialize};

use crate::comparison::ComparisonKind;
use crate::mbox::Subject;
use crate::protocol::{BaseSource, FailureReason};

/// How many hex digits name a tested commit, as 0-day prints them.
const COMMIT_DIGITS: usize = 10;

/// How many hex digits name a tree's base: 12, as a `Fixes:` tag does,
/// since a base is what someone types into `git checkout`.
const BASE_DIGITS: usize = 12;

/// Most characters of a failure's line a listing shows: enough for the
/// runner's `patch 2/3 "<subject>" does not apply to <base> (for the
/// patched kernel): error: patch failed: <file>:<line>` with a subject
/// of a usual length.
const DETAIL_CHARS: usize = 160;

/// How many workloads a calibration's name lists before `+N more`.
const NAMED_WORKLOADS: usize = 3;

/// How the detail of a job that never ran begins: it failed because an
/// earlier job (or an earlier step's patch) did, and says so after this.
pub const NOT_RUN: &str = "not run: ";

/// What a comparison's name says it is; the text report labels its name
/// line with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NameKind {
    /// One patch, named by its subject.
    Patch,
    /// A series of two or more patches.
    Series,
    /// A git range.
    Range,
    /// A tracked tree's new head.
    Tree,
    /// An A/A comparison, measuring a machine's noise.
    Calibration,
}

impl NameKind {
    /// `series`, `range`, …
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Patch => "patch",
            NameKind::Series => "series",
            NameKind::Range => "range",
            NameKind::Tree => "tree",
            NameKind::Calibration => "calibration",
        }
    }
}

/// A comparison's name and what kind of thing it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Name {
    /// What it names.
    pub kind: NameKind,
    /// The name itself.
    pub text: String,
}

/// What a comparison's row knows that its name is made from.
#[derive(Debug, Clone, Copy, Default)]
pub struct NameFacts<'a> {
    /// A/A or A/B (`None` counts as A/B).
    pub kind: Option<ComparisonKind>,
    /// The machine it runs on, once pinned.
    pub machine: Option<&'a str>,
    /// The measurement mode asked for (`tcg-icount`).
    pub backend: Option<&'a str>,
    /// The workloads it runs (what an A/A calibrates).
    pub workloads: &'a [String],
    /// The tracked tree whose head it measures.
    pub tree: Option<&'a str>,
    /// A git range's comparison: `A..B`, full ids.
    pub git_range: Option<&'a str>,
    /// The commit the patched side is (a range's end, a tree's head).
    pub commit: Option<&'a str>,
    /// That commit's subject, when known.
    pub commit_subject: Option<&'a str>,
    /// The series' cover letter's subject, when it has one.
    pub cover_letter: Option<&'a str>,
    /// The subject of the series' first patch.
    pub first_patch: Option<&'a str>,
    /// The subject of the series' last patch.
    pub last_patch: Option<&'a str>,
    /// How many patches (messages with a diff) the series has.
    pub patches: usize,
}

/// The name of the comparison `f` describes.
pub fn name(f: &NameFacts<'_>) -> Name {
    let named = |kind, text| Name { kind, text };
    if f.kind == Some(ComparisonKind::Aa) {
        let mut text = "A/A calibration".to_string();
        if let Some((first, rest)) = f.workloads.split_first() {
            text.push_str(&format!(" of {first}"));
            let listed = rest.len().min(NAMED_WORKLOADS - 1);
            for w in &rest[..listed] {
                text.push_str(&format!(", {w}"));
            }
            if rest.len() > listed {
                text.push_str(&format!(" +{} more", rest.len() - listed));
            }
        }
        if let Some(m) = f.machine {
            text.push_str(&format!(" on {m}"));
        }
        if let Some(b) = f.backend {
            text.push_str(&format!(" ({b})"));
        }
        return named(NameKind::Calibration, text);
    }
    if let (Some(tree), Some(range), true) = (f.tree, f.git_range, f.patches > 1) {
        // A push of several commits is its range: naming it by one
        // commit's subject would blame that one for the whole.
        if let Some((a, b)) = range.split_once("..") {
            return named(
                NameKind::Tree,
                format!(
                    "{tree} {}..{} ({})",
                    short(a, COMMIT_DIGITS),
                    short(b, COMMIT_DIGITS),
                    count(f.patches, "commit")
                ),
            );
        }
    }
    if let (Some(tree), Some(commit)) = (f.tree, f.commit) {
        // The head's own subject; a range's last patch is the head unless
        // the head changes no file.
        let subject = f
            .commit_subject
            .map(str::to_string)
            .or_else(|| f.last_patch.map(|s| Subject::parse(s).title));
        let mut text = format!("{tree} {}", short(commit, COMMIT_DIGITS));
        if let Some(s) = subject.filter(|s| !s.is_empty()) {
            text.push_str(&format!(" (\"{s}\")"));
        }
        return named(NameKind::Tree, text);
    }
    if let Some(range) = f.git_range {
        let spelled = match range.split_once("..") {
            Some((a, b)) => format!("{}..{}", short(a, COMMIT_DIGITS), short(b, COMMIT_DIGITS)),
            None => range.to_string(),
        };
        return named(
            NameKind::Range,
            format!("{spelled} ({})", count(f.patches, "commit")),
        );
    }
    let first = f.first_patch.unwrap_or("(no subject)");
    match (f.patches, f.cover_letter) {
        (0 | 1, _) => named(NameKind::Patch, first.to_string()),
        (_, Some(cover)) => named(NameKind::Series, cover.to_string()),
        (n, None) => named(
            NameKind::Series,
            format!(
                "{first} (+{} more patch{})",
                n - 1,
                if n == 2 { "" } else { "es" }
            ),
        ),
    }
}

/// Where the base came from, as the page and the text report show it: a
/// tracked tree's base is `vfs.all 1234567890ab`, another git base its
/// repository and short commit (`https://git.kernel.org/…/vfs.git
/// 1234567890ab`; a repository on the server's disk by its directory's
/// name alone, never its path), a tarball by its name.
pub fn base(tree: Option<&str>, base: &BaseSource) -> String {
    match (tree, base) {
        (Some(tree), BaseSource::Git { commit, .. }) => {
            format!("{tree} {}", short(commit, BASE_DIGITS))
        }
        (None, BaseSource::Git { url, commit }) => {
            format!("{} {}", repository(url), short(commit, BASE_DIGITS))
        }
        (_, BaseSource::Tarball { name }) => name.clone(),
    }
}

/// A base's kernel as a report's `commit:` line names it: a git base by
/// its short commit, a tarball by its name.
pub fn base_kernel(base: &BaseSource) -> String {
    match base {
        BaseSource::Git { commit, .. } => short(commit, BASE_DIGITS).to_string(),
        BaseSource::Tarball { name } => name.clone(),
    }
}

/// A git URL as a report names it: without credentials, and a local one
/// (a path, `file://`) by its last component, which is all a reader
/// elsewhere can use of it.
fn repository(url: &str) -> String {
    let url = crate::credentials::without_credentials(url);
    let local = url.starts_with("file://") || url.starts_with('/') || !url.contains("://");
    if !local {
        return url;
    }
    url.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|last| !last.is_empty())
        .unwrap_or("a local repository")
        .to_string()
}

/// Where a failed comparison failed, as the step that failed first.
#[derive(Debug, Clone, Copy)]
pub struct FailedStep {
    /// Which patch (or commit), from 1.
    pub step: i32,
    /// Of how many.
    pub of: usize,
    /// Whether the steps are a git range's commits.
    pub commits: bool,
}

/// A failed comparison's failure in a few words, from its failed job's
/// reason and detail: `patch 2/3 does not apply`, `build failed: …`.
/// The detail of a step's failure is on the step's page; the first line
/// of any other, cut short, is said here.
pub fn failure(reason: FailureReason, detail: Option<&str>, step: Option<FailedStep>) -> String {
    let line = failure_words(reason, detail, step).line;
    let mut cut: String = line.chars().take(DETAIL_CHARS).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    cut
}

/// A failure said in a line, with the lines of its detail behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureWords {
    /// `patch 2/3 does not apply`, `build failed: fs/file.c:12:5: error: …`,
    /// `kernel panic: the patched kernel (boot 3) panicked: Kernel panic -
    /// not syncing: …`.
    pub line: String,
    /// What the line does not say of the detail: git's words and the
    /// rejected hunk, the rest of a panic, the lines after a build error;
    /// all of it behind a step's line, which names only the patch.
    pub evidence: Option<String>,
}

/// [`failure`]'s line and the detail behind it. The line is the detail's
/// first line (with the next when the first ends in `:` and only
/// introduces it, as `… does not apply to linux-source-6.1:` introduces
/// git's `error: patch failed: fs/file.c:12`), led by the reason's words
/// unless it says them already (a runner writes `build failed: …`).
pub fn failure_words(
    reason: FailureReason,
    detail: Option<&str>,
    step: Option<FailedStep>,
) -> FailureWords {
    let detail = detail.unwrap_or_default();
    let evidence = |lines: &[&str]| {
        let text = lines.join("\n");
        let text = text.trim_matches('\n');
        (!text.trim().is_empty()).then(|| text.to_string())
    };
    let lines: Vec<&str> = detail.lines().map(str::trim_end).collect();
    if let Some(s) = step {
        let what = match reason {
            FailureReason::PatchDoesNotApply => "does not apply".to_string(),
            FailureReason::BuildFailed => "does not build".to_string(),
            other => format!("failed: {}", other.as_str()),
        };
        let unit = if s.commits { "commit" } else { "patch" };
        return FailureWords {
            line: format!("{unit} {}/{} {what}", s.step, s.of),
            evidence: evidence(&lines),
        };
    }
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return FailureWords {
            line: reason.as_str().to_string(),
            evidence: None,
        };
    };
    let mut said = vec![lines[first].trim()];
    let mut rest = first + 1;
    if said[0].ends_with(':') {
        if let Some(next) = (rest..lines.len()).find(|&i| !lines[i].trim().is_empty()) {
            said.push(lines[next].trim());
            rest = next + 1;
        }
    }
    let said = said.join(" ");
    let mut line = said.trim_end_matches(':').to_string();
    let lower = line.to_lowercase();
    let words_said = lower.contains(reason.as_str())
        || (reason == FailureReason::PatchDoesNotApply && lower.contains("does not apply"));
    if !words_said {
        line = format!("{}: {line}", reason.as_str());
    }
    FailureWords {
        line,
        evidence: evidence(&lines[rest..]),
    }
}

/// Which of a comparison's failed jobs, given in claim order as (reason,
/// detail), tells why it failed, by its position: the first that failed
/// on its own, before any cancelled or [`NOT_RUN`] for an earlier one's
/// failure. The listing's query (`db/comparisons/listing.rs`) orders them
/// the same way.
pub fn telling_failure<'a>(
    failed: impl IntoIterator<Item = (FailureReason, &'a str)>,
) -> Option<usize> {
    failed
        .into_iter()
        .enumerate()
        .min_by_key(|(i, (reason, detail))| {
            (
                *reason == FailureReason::Cancelled,
                detail.starts_with(NOT_RUN),
                *i,
            )
        })
        .map(|(i, _)| i)
}

/// `n things`, `1 thing`.
fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The first `digits` characters of a commit id.
fn short(sha: &str, digits: usize) -> &str {
    sha.get(..digits).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_names_its_repository_and_short_commit_never_a_local_path() {
        let commit = "b67165085bbdcd2ab4ac312200b3f368d33f228f".to_string();
        let git = |url: &str| BaseSource::Git {
            url: url.into(),
            commit: commit.clone(),
        };
        assert_eq!(
            base(None, &git("file:///var/cache/patchperf/linux-069e.git")),
            "linux-069e.git b67165085bbd"
        );
        assert_eq!(base(None, &git("/srv/git/linux/")), "linux b67165085bbd");
        assert_eq!(
            base(
                None,
                &git("https://user:pw@git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git")
            ),
            "https://git.kernel.org/pub/scm/linux/kernel/git/vfs/vfs.git b67165085bbd"
        );
        assert_eq!(
            base(Some("vfs.all"), &git("file:///x.git")),
            "vfs.all b67165085bbd"
        );
        assert_eq!(base_kernel(&git("file:///x.git")), "b67165085bbd");
        let tarball = BaseSource::Tarball {
            name: "linux-source-6.1".into(),
        };
        assert_eq!(base(None, &tarball), "linux-source-6.1");
        assert_eq!(base_kernel(&tarball), "linux-source-6.1");
    }

    const A: &str = "1234567890abcdef1234567890abcdef12345678";
    const B: &str = "87d7add1d7aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn a_series_is_named_by_its_cover_letter_or_its_first_patch_and_the_rest() {
        let series = NameFacts {
            cover_letter: Some("[PATCH v2 0/3] fs: faster close"),
            first_patch: Some("[PATCH v2 1/3] fs: move fput"),
            patches: 3,
            ..NameFacts::default()
        };
        assert_eq!(
            name(&series),
            Name {
                kind: NameKind::Series,
                text: "[PATCH v2 0/3] fs: faster close".into()
            }
        );
        let bare = NameFacts {
            cover_letter: None,
            ..series
        };
        assert_eq!(
            name(&bare).text,
            "[PATCH v2 1/3] fs: move fput (+2 more patches)"
        );
        let two = NameFacts { patches: 2, ..bare };
        assert_eq!(
            name(&two).text,
            "[PATCH v2 1/3] fs: move fput (+1 more patch)"
        );
        let one = NameFacts { patches: 1, ..bare };
        assert_eq!(name(&one).text, "[PATCH v2 1/3] fs: move fput");
        assert_eq!(name(&one).kind, NameKind::Patch);
    }

    #[test]
    fn a_range_a_tree_and_a_calibration_are_named_as_kernel_people_do() {
        let range = format!("{A}..{B}");
        let facts = NameFacts {
            git_range: Some(&range),
            commit: Some(B),
            first_patch: Some("[PATCH] fs: the innocent one"),
            last_patch: Some("[PATCH] fs: the head"),
            patches: 5,
            ..NameFacts::default()
        };
        assert_eq!(name(&facts).text, "1234567890..87d7add1d7 (5 commits)");
        // A push of five commits is its range, not its head's subject.
        let push = NameFacts {
            tree: Some("vfs.all"),
            commit_subject: Some("fs: the head"),
            ..facts
        };
        assert_eq!(
            name(&push).text,
            "vfs.all 1234567890..87d7add1d7 (5 commits)"
        );
        assert_eq!(name(&push).kind, NameKind::Tree);
        let tree = NameFacts { patches: 1, ..push };
        assert_eq!(name(&tree).text, "vfs.all 87d7add1d7 (\"fs: the head\")");
        let unknown = NameFacts {
            commit_subject: None,
            ..tree
        };
        assert_eq!(name(&unknown).text, "vfs.all 87d7add1d7 (\"fs: the head\")");
        let aa = NameFacts {
            kind: Some(ComparisonKind::Aa),
            machine: Some("lab-1"),
            backend: Some("tcg-icount"),
            ..NameFacts::default()
        };
        assert_eq!(name(&aa).text, "A/A calibration on lab-1 (tcg-icount)");
        let workloads = ["open1".to_string()];
        let open1 = NameFacts {
            workloads: &workloads,
            ..aa
        };
        assert_eq!(
            name(&open1).text,
            "A/A calibration of open1 on lab-1 (tcg-icount)"
        );
        let many: Vec<String> = ["open1", "dup1", "fstat", "poll1", "lock1"]
            .map(String::from)
            .to_vec();
        let unpinned = NameFacts {
            workloads: &many,
            machine: None,
            ..aa
        };
        assert_eq!(
            name(&unpinned).text,
            "A/A calibration of open1, dup1, fstat +2 more (tcg-icount)"
        );
        assert_eq!(name(&aa).kind, NameKind::Calibration);
        let git = BaseSource::Git {
            url: "/srv/git/vfs.git".into(),
            commit: A.into(),
        };
        assert_eq!(base(Some("vfs.all"), &git), "vfs.all 1234567890ab");
        // Not the server's path: the repository and a short commit.
        assert_eq!(base(None, &git), "vfs.git 1234567890ab");
    }

    #[test]
    fn a_failure_is_said_in_a_few_words() {
        let step = FailedStep {
            step: 2,
            of: 3,
            commits: false,
        };
        assert_eq!(
            failure(
                FailureReason::PatchDoesNotApply,
                Some("not run: …"),
                Some(step)
            ),
            "patch 2/3 does not apply"
        );
        assert_eq!(
            failure(
                FailureReason::BuildFailed,
                None,
                Some(FailedStep {
                    commits: true,
                    ..step
                })
            ),
            "commit 2/3 does not build"
        );
        assert_eq!(
            failure(
                FailureReason::BuildFailed,
                Some("\nfs/open.c:12: error: x undeclared\nmore"),
                None
            ),
            "build failed: fs/open.c:12: error: x undeclared"
        );
        assert_eq!(
            failure(FailureReason::KernelPanic, None, None),
            "kernel panic"
        );
        let long = "x".repeat(300);
        assert!(failure(FailureReason::Other, Some(&long), None).ends_with("x…"));
    }

    /// What `runner/src/kernel/pipeline/{prepare,boot}.rs` write for a
    /// series that does not apply, a build error and a panic.
    const APPLY: &str = "patch 2/3 \"[PATCH 2/3] fs: x\" does not apply to linux-source-6.1 (for \
                         the patched kernel):\nerror: patch failed: fs/file.c:12\nerror: \
                         fs/file.c: patch does not apply\nrejected hunk (fs/file.c:12):\n@@ -12,3 \
                         +12,3 @@\n-\told\n+\tnew\n";

    #[test]
    fn a_failure_says_the_runners_words_once_with_the_hunk_behind_them() {
        let words = failure_words(FailureReason::PatchDoesNotApply, Some(APPLY), None);
        assert_eq!(
            words.line,
            "patch 2/3 \"[PATCH 2/3] fs: x\" does not apply to linux-source-6.1 (for the patched \
             kernel): error: patch failed: fs/file.c:12"
        );
        assert_eq!(
            words.evidence.as_deref(),
            Some(
                "error: fs/file.c: patch does not apply\nrejected hunk (fs/file.c:12):\n@@ -12,3 \
                 +12,3 @@\n-\told\n+\tnew"
            )
        );
        // A step's line names the patch; all of its detail is behind it.
        let step = FailedStep {
            step: 2,
            of: 3,
            commits: false,
        };
        let words = failure_words(FailureReason::PatchDoesNotApply, Some(APPLY), Some(step));
        assert_eq!(words.line, "patch 2/3 does not apply");
        assert!(words.evidence.unwrap().ends_with("+\tnew"));
        // The runner says "build failed:" itself: not twice.
        let build = "build failed: fs/open.c:12:5: error: 'fd' undeclared";
        assert_eq!(
            failure_words(FailureReason::BuildFailed, Some(build), None),
            FailureWords {
                line: build.into(),
                evidence: None
            }
        );
        let panic =
            "the patched kernel (boot 3) panicked:\nKernel panic - not syncing: VFS\nCPU: 0";
        assert_eq!(
            failure_words(FailureReason::KernelPanic, Some(panic), None),
            FailureWords {
                // The panic's own words say it.
                line: "the patched kernel (boot 3) panicked: Kernel panic - not syncing: VFS"
                    .into(),
                evidence: Some("CPU: 0".into())
            }
        );
        let boot = "the base kernel (boot 1): no console output";
        assert_eq!(
            failure(FailureReason::BootFailed, Some(boot), None),
            "boot failed: the base kernel (boot 1): no console output"
        );
    }

    #[test]
    fn the_job_that_failed_on_its_own_tells_why() {
        let jobs = [
            (FailureReason::Cancelled, "cancelled"),
            (
                FailureReason::BuildFailed,
                "not run: job 2 failed: build failed",
            ),
            (
                FailureReason::BuildFailed,
                "build failed: fs/open.c:1: error",
            ),
            (
                FailureReason::Timeout,
                "the patched kernel (boot 5) did not come up",
            ),
        ];
        assert_eq!(telling_failure(jobs), Some(2));
        assert_eq!(telling_failure(jobs[..2].to_vec()), Some(1));
        assert_eq!(telling_failure([]), None);
    }
}
