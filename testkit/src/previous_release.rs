//! The server of the release before the migrations being tested, built
//! once per commit and kept in the shared test cache, for the rolling
//! upgrade test: "the release before" is the newest commit on `HEAD`'s
//! first-parent line whose `migrations/` differ from the working tree's
//! (the server before the newest migrations). Built with cargo in a
//! target directory of its own, seeded with hard links to the dependencies
//! the running test build already compiled: with the same profile and
//! versions cargo finds them fresh, so a cold test command compiles only
//! the workspace's crates again (~40 s) instead of every dependency
//! (~110 s).

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
    // `-m`: the files get the time of unpacking, newer than any build
    // output. Cargo judges a path crate fresh by its sources' times, and the
    // seeded target holds today's workspace crates under the same unit
    // names: with the commit's old times it would take them for the
    // commit's.
    let archive = format!(
        "git -C '{}' archive '{commit}' | tar -x -m -C '{}'",
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
    // Today's build profiles, so that the seeded dependencies match: they
    // change debug info and optimisation, never what the server does.
    let manifest = src.join("Cargo.toml");
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let today = read(&repo_root().join("Cargo.toml"))?;
    std::fs::write(&manifest, with_profiles_of(&today, &read(&manifest)?))
        .map_err(|e| format!("{}: {e}", manifest.display()))?;
    // Until 2026-12-03 the cache kept one target directory for every
    // previous release; the seeded one below makes it a waste of disk.
    let _ = std::fs::remove_dir_all(root.join("target"));
    let target = root.join(format!("target-{commit}"));
    let built = build(&commit, &src, &target, &binary);
    let _ = std::fs::remove_dir_all(&target);
    let _ = std::fs::remove_dir_all(&src);
    built?;
    Ok(PreviousServer {
        commit,
        binary,
        lib_rs,
    })
}

/// Builds the server unpacked in `src` in the target directory `target`
/// and keeps its binary as `binary`.
fn build(commit: &str, src: &Path, target: &Path, binary: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(target);
    let seeded = seed_target(target);
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
        .current_dir(src)
        .env("CARGO_TARGET_DIR", target)
        .env("SQLX_OFFLINE", "true")
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
        "built the server of {commit} in {:.0} s, {} (load average {})",
        started.elapsed().as_secs_f64(),
        match &seeded {
            Ok(from) => format!("dependencies reused from {}", from.display()),
            Err(why) => format!("every dependency compiled: {why}"),
        },
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    std::fs::create_dir_all(binary.parent().unwrap()).map_err(|e| e.to_string())?;
    std::fs::copy(target.join("debug/patchperf-server"), binary)
        .map_err(|e| format!("keeping the binary: {e}"))?;
    Ok(())
}

/// Fills `target`'s `debug/` with the running test build's compiled
/// dependencies: hard links to its `deps/` (the workspace's own crates
/// left out, they are built again from the commit) and copies of its
/// small `build/` and `.fingerprint/`, which cargo rewrites in place when
/// it rebuilds a unit (a hard link would change the test build's too).
/// Returns the directory it seeded from; an error (another file system,
/// no cargo test build around us) only means a longer build.
fn seed_target(target: &Path) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // A test binary lives in <target>/<profile>/deps/.
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .filter(|p| p.join(".fingerprint").is_dir())
        .ok_or_else(|| format!("{} is not in a cargo target directory", exe.display()))?;
    let into = target.join("debug");
    std::fs::create_dir_all(into.join("deps")).map_err(|e| e.to_string())?;
    let entries = std::fs::read_dir(profile.join("deps")).map_err(|e| e.to_string())?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("patchperf") || name.starts_with("libpatchperf") {
            continue;
        }
        if entry.file_type().map_err(|e| e.to_string())?.is_file() {
            std::fs::hard_link(entry.path(), into.join("deps").join(&*name))
                .map_err(|e| format!("linking {}: {e}", entry.path().display()))?;
        }
    }
    for dir in ["build", ".fingerprint"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(profile.join(dir))
            .arg(&into)
            .status()
            .map_err(|e| format!("cp: {e}"))?;
        if !status.success() {
            return Err(format!("copying {}: {status}", profile.join(dir).display()));
        }
    }
    Ok(profile.to_path_buf())
}

/// `manifest` with its `[profile…]` tables replaced by those of `today`.
fn with_profiles_of(today: &str, manifest: &str) -> String {
    // A table runs from its header to the next header.
    fn tables(text: &str, profiles: bool) -> String {
        let mut inside = false;
        let mut out = String::new();
        for line in text.lines() {
            let header = line.trim_start();
            if header.starts_with('[') {
                inside = header.starts_with("[profile.") || header.starts_with("[profile]");
            }
            if inside == profiles {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
    format!("{}\n{}", tables(manifest, false), tables(today, true))
}

#[cfg(test)]
mod tests {
    use super::with_profiles_of;

    #[test]
    fn the_manifest_takes_today_s_profiles_and_keeps_the_rest() {
        let old = "[workspace]\nmembers = [\"a\"]\n\n[profile.dev]\ndebug = 2\n\n\
                   [profile.dev.package.sha2]\nopt-level = 3\n\n[workspace.lints.rust]\nx = 1\n";
        let today = "[workspace]\nmembers = [\"a\", \"b\"]\n\n[profile.dev]\ndebug = 0\n\n\
                     [profile.dev.package.\"*\"]\ndebug = false\n";
        let got = with_profiles_of(today, old);
        assert!(got.contains("members = [\"a\"]"), "{got}");
        assert!(got.contains("[workspace.lints.rust]\nx = 1"), "{got}");
        assert!(got.contains("[profile.dev]\ndebug = 0"), "{got}");
        assert!(
            got.contains("[profile.dev.package.\"*\"]\ndebug = false"),
            "{got}"
        );
        assert!(!got.contains("debug = 2") && !got.contains("sha2"), "{got}");
        assert!(!got.contains("\"b\""), "{got}");
    }
}
