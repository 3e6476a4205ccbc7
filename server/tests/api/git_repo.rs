//! Small real git repositories for the range and bisection tests: git run
//! with a fixed identity and fixed dates, so commit ids repeat.

use std::path::Path;
use std::process::Command;

/// Runs git in `dir` with a fixed identity and dates; its output, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Kernel Hacker")
        .env("GIT_AUTHOR_EMAIL", "kh@example.org")
        .env("GIT_COMMITTER_NAME", "Kernel Hacker")
        .env("GIT_COMMITTER_EMAIL", "kh@example.org")
        .env("GIT_AUTHOR_DATE", "2026-11-30T09:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-11-30T09:00:00Z")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn commit_file(dir: &Path, file: &str, text: &str, subject: &str) -> String {
    std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", subject]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A repository of a base commit and `n` commits `fs: step k`, each
/// touching its own file; the directory and the ids, base first.
pub fn linear(n: usize) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "master"]);
    let mut ids = vec![commit_file(d, "fs/open.c", "int open;\n", "base")];
    for k in 1..=n {
        ids.push(commit_file(
            d,
            &format!("fs/step{k}.c"),
            &format!("int step{k};\n"),
            &format!("fs: step {k}"),
        ));
    }
    (dir, ids)
}

/// Commits `file` with `text` as `name <email>`, the message kept exactly
/// as given (`--cleanup=verbatim`: a CR stays); the new commit's id.
pub fn commit_as(
    dir: &Path,
    file: &str,
    text: &[u8],
    message: &str,
    name: &str,
    email: &str,
) -> String {
    std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    let msg = dir.join(".git").join("patchperf-message");
    std::fs::write(&msg, message).unwrap();
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["commit", "-q", "--cleanup=verbatim", "-F"])
        .arg(&msg)
        .env("GIT_AUTHOR_NAME", name)
        .env("GIT_AUTHOR_EMAIL", email)
        .env("GIT_COMMITTER_NAME", "Kernel Hacker")
        .env("GIT_COMMITTER_EMAIL", "kh@example.org")
        .env("GIT_AUTHOR_DATE", "2026-11-30T09:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-11-30T09:00:00Z")
        .output()
        .unwrap();
    assert!(out.status.success(), "git commit: {out:?}");
    git(dir, &["rev-parse", "HEAD"])
}

/// `bytes` bytes that do not compress (xorshift), for a blob git cannot
/// make small.
pub fn noise(bytes: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(bytes + 8);
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(bytes);
    out
}
