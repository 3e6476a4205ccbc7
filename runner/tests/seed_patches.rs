//! The ported seed patches in `examples/patches/` (Debian's linux-source-6.1,
//! 6.1.192) and `examples/patches-6.12/` (linux-source-6.12, 6.12.118) are
//! what the demo measures and what a newcomer feeds to the kernel
//! pipeline, so they must stay usable: each is a well-formed single-patch
//! mbox that `git am` and `patch -p1` take cleanly on its release, alone
//! and as one series, and each folder's README says where each came from.
//! These checks are fast (seconds once a tarball is unpacked); the compile
//! check of the 6.1 ports lives in `seed_patches_compile.rs`, the 6.12
//! ports are built and booted by `kernel.rs`.

mod seed_patches_support;

use std::path::Path;

use seed_patches_support::{
    LINUX_6_12, RELEASES, Release, SourceTree, copy_files, git, patch_p1, source_tree_of,
    touched_by_any,
};
use tempfile::TempDir;

/// `release`'s unpacked tree, or `None` after printing why the test skips.
fn tree_or_skip(release: Release) -> Option<SourceTree> {
    match source_tree_of(release) {
        Ok(tree) => Some(tree),
        Err(reason) => {
            eprintln!("skipping: {reason}");
            None
        }
    }
}

/// A fresh git repository holding `files` as they are in the pristine tree,
/// committed, ready for `git am`.
fn repo_with(release: Release, tree: &Path, files: &[String]) -> TempDir {
    let repo = tempfile::Builder::new()
        .prefix("seed-am-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary repository");
    copy_files(tree, repo.path(), files);
    git(repo.path())
        .args(["init", "-q", "-b", "pristine"])
        .run()
        .expect("git init");
    // Debian's tarball ships a .gitignore that ignores everything at the top
    // level, hence -f (the copied files do not include it anyway).
    git(repo.path())
        .args(["add", "-f", "-A"])
        .run()
        .expect("git add");
    git(repo.path())
        .args([
            "commit",
            "-q",
            "-m",
            &format!("{} (the files the patches touch)", release.package),
        ])
        .run()
        .expect("git commit");
    repo
}

#[test]
fn there_is_one_ported_patch_per_seed_in_series_order() {
    for release in RELEASES {
        let prefixes: Vec<String> = release
            .patches()
            .iter()
            .map(|m| m.name[..4].to_string())
            .collect();
        let seeds: Vec<String> = release.seeds.iter().map(|s| format!("{s}-")).collect();
        assert_eq!(prefixes, seeds, "{}", release.package);
    }
    // A port to 6.12 carries the same change as its 6.1 port: the same
    // file name, subject, author and upstream commit.
    let on_6_1 = RELEASES[0].patches();
    for port in RELEASES[1].patches() {
        let old = on_6_1.iter().find(|m| m.name == port.name).unwrap();
        for header in ["From", "Subject", "Message-ID", "Date"] {
            assert_eq!(port.header(header), old.header(header), "{}", port.name);
        }
        assert_eq!(port.text.lines().next(), old.text.lines().next());
    }
}

#[test]
fn every_patch_is_a_single_message_mbox_with_the_headers_git_am_reads() {
    for mbox in RELEASES.iter().flat_map(Release::patches) {
        let name = &mbox.name;
        let separators: Vec<&str> = mbox
            .text
            .lines()
            .filter(|l| l.starts_with("From ") && l.ends_with(" Mon Sep 17 00:00:00 2001"))
            .collect();
        assert_eq!(separators.len(), 1, "{name}: want exactly one message");
        assert!(
            mbox.text.starts_with(separators[0]),
            "{name}: must start with its From line"
        );
        let sha = separators[0]
            .strip_prefix("From ")
            .and_then(|rest| rest.split_once(' '))
            .map(|(sha, _)| sha)
            .unwrap_or_default();
        assert!(
            sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}: the From line must name a 40-digit commit, not {sha:?}"
        );

        let author = mbox.header("From").unwrap_or_default();
        assert!(
            author.contains(" <") && author.ends_with('>') && author.contains('@'),
            "{name}: From: must be `Name <address>`, not {author:?}"
        );
        assert!(mbox.header("Date").is_some(), "{name}: no Date:");
        let subject = mbox.header("Subject").unwrap_or_default();
        assert!(
            subject.starts_with("[PATCH] "),
            "{name}: Subject must start with [PATCH]"
        );
        let message_id = mbox.header("Message-ID").unwrap_or_default();
        assert!(
            message_id.starts_with('<') && message_id.ends_with('>') && message_id.contains('@'),
            "{name}: Message-ID must be <id@host>, not {message_id:?}"
        );
        assert!(
            mbox.commit_message().contains("Signed-off-by: "),
            "{name}: the commit message lost its Signed-off-by lines"
        );
        assert!(!mbox.touched_files().is_empty(), "{name}: no diff");
        assert!(!mbox.text.contains('\r'), "{name}: CRLF line ends");
    }
}

#[test]
fn the_readme_names_every_patch_and_the_posting_it_came_from() {
    for release in RELEASES {
        readme_names_every_patch(release);
    }
}

fn readme_names_every_patch(release: Release) {
    let patches_dir = release.patches_dir();
    let readme_path = patches_dir.join("README.md");
    let readme = std::fs::read_to_string(&readme_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", readme_path.display()));
    for mbox in release.patches() {
        assert!(
            readme.contains(&mbox.name),
            "README.md does not mention {}",
            mbox.name
        );
        let message_id = mbox.header("Message-ID").unwrap_or_default();
        let message_id = message_id.trim_matches(['<', '>']);
        assert!(
            readme.contains(message_id),
            "README.md does not cite {} for {}",
            message_id,
            mbox.name
        );
    }
    // Our files are named `NNN-<subject>.patch` (the README also quotes an
    // upstream attachment name, `0001-….patch`, which is not ours).
    let ours = |word: &str| {
        let b = word.as_bytes();
        word.ends_with(".patch")
            && b.len() > 4
            && b[..3].iter().all(u8::is_ascii_digit)
            && b[3] == b'-'
    };
    for word in readme.split(|c: char| c.is_whitespace() || "`()[]|,".contains(c)) {
        if ours(word) {
            assert!(
                patches_dir.join(word).is_file(),
                "README.md names {word}, which is not in examples/{}/",
                release.folder
            );
        }
    }
}

#[test]
fn each_patch_applies_alone_with_git_am_and_with_patch_p1() {
    for release in RELEASES {
        applies_alone(release);
    }
}

fn applies_alone(release: Release) {
    let Some(tree) = tree_or_skip(release) else {
        return;
    };
    for mbox in release.patches() {
        let name = &mbox.name;
        let touched = mbox.touched_files();
        let repo = repo_with(release, &tree.path, &touched);
        git(repo.path())
            .args(["am", "--whitespace=error-all"])
            .arg(&mbox.path)
            .run()
            .unwrap_or_else(|e| panic!("{name}: {e}"));

        // git am took author, subject and sign-offs from the mail, and the
        // commit changes exactly the files the diff names.
        let log = git(repo.path())
            .args(["log", "-1", "--format=%an <%ae>%x00%s%x00%b"])
            .stdout_string()
            .expect("git log");
        let fields: Vec<&str> = log.split('\0').collect();
        assert_eq!(fields.len(), 3, "{name}: git log printed {log:?}");
        assert_eq!(fields[0], mbox.header("From").unwrap(), "{name}: author");
        let subject = mbox.header("Subject").unwrap();
        assert_eq!(
            fields[1],
            subject.strip_prefix("[PATCH] ").unwrap(),
            "{name}: subject"
        );
        assert!(
            fields[2].contains("Signed-off-by: "),
            "{name}: sign-offs lost by git am"
        );
        let changed = git(repo.path())
            .args(["diff", "--name-only", "HEAD~1", "HEAD"])
            .stdout_string()
            .expect("git diff");
        let mut changed: Vec<&str> = changed.lines().collect();
        changed.sort_unstable();
        let mut expected: Vec<&str> = touched.iter().map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(changed, expected, "{name}: files changed by the commit");

        patch_p1(&tree.path, &mbox)
            .arg("--dry-run")
            .run()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn all_patches_apply_in_order_as_one_series() {
    for release in RELEASES {
        applies_as_a_series(release);
    }
}

fn applies_as_a_series(release: Release) {
    let Some(tree) = tree_or_skip(release) else {
        return;
    };
    let all = release.patches();
    let repo = repo_with(release, &tree.path, &touched_by_any(&all));
    git(repo.path())
        .args(["am", "--whitespace=error-all"])
        .args(all.iter().map(|m| &m.path))
        .run()
        .unwrap_or_else(|e| panic!("the series on {}: {e}", release.package));
    let commits = git(repo.path())
        .args(["rev-list", "--count", "HEAD"])
        .stdout_string()
        .expect("git rev-list");
    assert_eq!(
        commits,
        (1 + all.len()).to_string(),
        "pristine commit + one per patch"
    );
}

/// The upstream examples of `examples/upstream/` (one per workload
/// family, with the kernel test robot's figure) apply to Debian's
/// linux-source-6.12 as they are, each alone, and their README names each
/// with the report it quotes.
#[test]
fn the_upstream_examples_apply_to_6_12_and_cite_their_report() {
    let dir = LINUX_6_12.patches_dir().join("../upstream");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let examples = seed_patches_support::Mbox::all_in(&dir);
    assert_eq!(examples.len(), 2, "one example a family found");
    for mbox in &examples {
        assert!(readme.contains(&mbox.name), "README.md lacks {}", mbox.name);
        assert!(
            mbox.text.contains("https://lore.kernel.org/"),
            "{}: no report cited",
            mbox.name
        );
    }
    let Some(tree) = tree_or_skip(LINUX_6_12) else {
        return;
    };
    for mbox in &examples {
        patch_p1(&tree.path, mbox)
            .arg("--dry-run")
            .run()
            .unwrap_or_else(|e| panic!("{}: {e}", mbox.name));
    }
}
