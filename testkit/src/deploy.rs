//! The deployment files under `deploy/` as tests check them: where they
//! are, and `systemd-analyze verify` of a unit with its `ExecStart` binary
//! pointed at the one the test built.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// What a check of a deployment file found.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// The tool ran and found nothing wrong.
    Passed,
    /// The tool is not on this machine: why the check did not run.
    Skipped(String),
}

/// Runs `systemd-analyze verify` on the units `names` of
/// `deploy/systemd/`, copied into a temporary directory with each `from`
/// of `rewrites` replaced by its `to` (the `ExecStart` path by the binary
/// the test built), all in one call, so that the units' references to each other resolve.
/// Any warning counts as a failure: `verify` prints a misspelt key or a
/// value it cannot parse and still exits 0.
pub fn verify_units(names: &[&str], rewrites: &[(&str, &str)]) -> Result<Checked, String> {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        return Ok(Checked::Skipped(
            "systemd-analyze is not installed (Debian's `systemd` package)".into(),
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut paths = Vec::new();
    for name in names {
        let text = std::fs::read_to_string(deploy_dir().join("systemd").join(name))
            .map_err(|e| format!("{name}: {e}"))?;
        let rewritten = rewrites
            .iter()
            .fold(text, |text, (from, to)| text.replace(from, to));
        let path = dir.path().join(name);
        std::fs::write(&path, rewritten).map_err(|e| e.to_string())?;
        paths.push(path);
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(&paths)
        .output()
        .map_err(|e| format!("running systemd-analyze: {e}"))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.trim().is_empty() {
        Ok(Checked::Passed)
    } else {
        Err(format!(
            "systemd-analyze verify {names:?} ({}): {}",
            out.status,
            said.trim()
        ))
    }
}
