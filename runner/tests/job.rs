//! `patchperf-runner job` without a job file, as a developer types it: what
//! it refuses before any kernel is built (exit 2, in words), and how it
//! reads a range of the clone it runs in. Measuring for real is the kernel
//! test `a_job_without_a_job_file_measures_an_mbox_and_prints_the_verdict`.

use std::path::Path;
use std::process::{Command, Output};

fn job(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_patchperf-runner"))
        .arg("job")
        .args(args)
        .current_dir(dir)
        // Never the machine's cache: every case here stops before it.
        .env("PATCHPERF_CACHE", dir.join("cache"))
        .output()
        .unwrap()
}

fn refused(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=A U Thor", "-c", "user.email=a@example.org"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn without_a_job_file_it_needs_a_series_and_refuses_a_bad_one_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stderr = refused(&job(d, &[]));
    assert!(stderr.contains("--patches"), "{stderr}");

    // A job file and the command line's series are one too many.
    std::fs::write(
        d.join("j.toml"),
        "patches = \"x\"\nworkloads = [\"open1\"]\n",
    )
    .unwrap();
    let stderr = refused(&job(d, &["j.toml", "--patches", "x.mbox"]));
    assert!(stderr.contains("cannot be used with"), "{stderr}");

    // A plain diff is no series: said before anything is built.
    std::fs::write(
        d.join("plain.diff"),
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    let stderr = refused(&job(d, &["--patches", "plain.diff", "-w", "open1"]));
    assert!(stderr.contains("plain.diff"), "{stderr}");

    let stderr = refused(&job(d, &["--patches", "plain.diff", "-w", "open9"]));
    assert!(stderr.contains("unknown workload \"open9\""), "{stderr}");
    let stderr = refused(&job(
        d,
        &["--patches", "plain.diff", "-w", "open1", "--runs", "2"],
    ));
    assert!(stderr.contains("runs is 2"), "{stderr}");

    // No workload named: the map's, by the files the series touches; a
    // series no workload exercises is not measured, saying why.
    std::fs::write(
        d.join("docs.mbox"),
        "From 1 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\n\
         Subject: [PATCH] docs: typo\n\n---\n\
         diff --git a/Documentation/x.txt b/Documentation/x.txt\n\
         --- a/Documentation/x.txt\n+++ b/Documentation/x.txt\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    let stderr = refused(&job(d, &["--patches", "docs.mbox"]));
    assert!(
        stderr.contains("not measured: no workload exercises Documentation/x.txt"),
        "{stderr}"
    );

    // A range needs the clone it is run in.
    let stderr = refused(&job(d, &["--range", "HEAD~1..", "-w", "open1"]));
    assert!(stderr.contains("is not inside a git clone"), "{stderr}");
}

/// `--range A..` reads the clone it runs in: its commits since A, built
/// from this clone at their merge base (said on standard error); the
/// job's own checks come after, so a bad workload stops it there.
#[test]
fn a_range_is_read_from_the_clone_it_runs_in() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "master"]);
    std::fs::write(d.join("file.c"), "int a;\n").unwrap();
    git(d, &["add", "file.c"]);
    git(d, &["commit", "-q", "-m", "base"]);
    for (n, text) in [(1, "int a, b;\n"), (2, "int a, b, c;\n")] {
        std::fs::write(d.join("file.c"), text).unwrap();
        git(d, &["commit", "-q", "-am", &format!("fs: change {n}")]);
    }
    let out = job(d, &["--range", "master~2..", "-w", "open9"]);
    let stderr = refused(&out);
    assert!(stderr.contains("2 commits of this clone, on "), "{stderr}");
    assert!(stderr.contains("unknown workload \"open9\""), "{stderr}");
}
