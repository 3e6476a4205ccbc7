//! The server of the release before the migrations being tested, built
//! once per commit and kept in the shared test cache, for the rolling
//! upgrade test: "the release before" is the newest commit on `HEAD`'s
//! first-parent line whose `migrations/` differ from the working tree's
//! (the server before the newest migrations). Built with cargo into a
//! target directory of its own under the cache, so that the next previous
//! release (the next migration) recompiles only the crates that changed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::test_cache::cache_dir;

/// A server binary of an earlier commit.
#[derive(Debug, Clone)]
pub struct PreviousServer {
    /// The commit it was built from.
    pub commit: String,
    /// Its `patchperf-server`.
    pub binary: PathBuf,
    /// Its `server/src/lib.rs`, to see what it can do.
    pub lib_rs: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit of the release before the working tree's migrations; why
/// not when the checkout has no history to tell (a tarball, a shallow
/// clone).
pub fn previous_commit() -> Result<String, String> {
    let commits = git(&["rev-list", "--first-parent", "--max-count=200", "HEAD"])?;
    for commit in commits.lines() {
        let same = Command::new("git")
            .arg("-C")
            .arg(repo_root())
            .args(["diff", "--quiet", commit, "--", "migrations/"])
            .status()
            .map_err(|e| format!("git: {e}"))?;
        if !same.success() {
            return Ok(commit.to_string());
        }
    }
    Err("no commit in the last 200 on HEAD's first-parent line has other migrations".into())
}

/// The previous release's server, built now unless the cache has it.
/// Prints how long a build took.
pub fn server() -> Result<PreviousServer, String> {
    let commit = previous_commit()?;
    let root = cache_dir().join("previous-server");
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let lock = std::fs::File::create(root.join("lock")).map_err(|e| e.to_string())?;
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("locking {}: {e}", root.display()))?;
    let lib_rs = git(&["show", &format!("{commit}:server/src/lib.rs")])?;
    let binary = root.join(&commit).join("patchperf-server");
    if binary.is_file() {
        return Ok(PreviousServer {
            commit,
            binary,
            lib_rs,
        });
    }
    let src = root.join(format!("src-{commit}"));
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    let archive = format!(
        "git -C '{}' archive '{commit}' | tar -x -C '{}'",
        repo_root().display(),
        src.display()
    );
    let unpacked = Command::new("sh")
        .args(["-c", &archive])
        .status()
        .map_err(|e| e.to_string())?;
    if !unpacked.success() {
        return Err(format!("unpacking {commit}: {unpacked}"));
    }
    let started = Instant::now();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--locked",
            "-p",
            "patchperf-server",
            "--bin",
            "patchperf-server",
        ])
        .current_dir(&src)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("SQLX_OFFLINE", "true")
        // Only run, never debugged: no debug info makes the cold build
        // (every dependency of the server) shorter.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(20).collect();
        return Err(format!(
            "building the server of {commit} failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    eprintln!(
        "built the server of {commit} in {:.0} s (load average {})",
        started.elapsed().as_secs_f64(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    std::fs::create_dir_all(binary.parent().unwrap()).map_err(|e| e.to_string())?;
    std::fs::copy(root.join("target/debug/patchperf-server"), &binary)
        .map_err(|e| format!("keeping the binary: {e}"))?;
    let _ = std::fs::remove_dir_all(&src);
    Ok(PreviousServer {
        commit,
        binary,
        lib_rs,
    })
}
