//! `b4 am` run on an mbox file, offline: `--offline-mode`, attestation off
//! (DKIM checks ask DNS), `HOME` a temporary directory, and inside a
//! network namespace of its own when `unshare -n` works (as root), so it
//! cannot reach the network even by mistake. Its am-ready mbox is read
//! back into (subject, author, diff) per patch, in order, and the patch
//! numbers it calls missing from its log.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchperf_common::mail::{Mailbox, split_mbox};
use patchperf_common::mbox;

/// A patch as compared: subject, author, and the diff.
pub type Patch = (String, Option<Mailbox>, String);

/// What `b4 am` made of a thread.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Am {
    /// The patches of the am-ready mbox, in order.
    pub patches: Vec<Patch>,
    /// The numbers it says are missing (`ERROR: missing [2/3]!`).
    pub missing: Vec<u32>,
}

/// An installed b4.
#[derive(Debug)]
pub struct B4 {
    program: PathBuf,
    isolated: bool,
}

impl B4 {
    /// The b4 to compare with: `$PATCHPERF_B4`, else the one `./patchperf`
    /// installs under `target/b4-venv`, else `b4` on `PATH`; `Err` says
    /// why there is none.
    pub fn find() -> Result<B4, String> {
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/b4-venv/bin/b4");
        let candidates: Vec<PathBuf> = std::env::var_os("PATCHPERF_B4")
            .map(PathBuf::from)
            .into_iter()
            .chain([venv, PathBuf::from("b4")])
            .collect();
        for program in candidates {
            let works = Command::new(&program)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            if works {
                let isolated = Command::new("unshare")
                    .args(["-n", "true"])
                    .status()
                    .is_ok_and(|s| s.success());
                return Ok(B4 { program, isolated });
            }
        }
        Err(
            "b4 is not installed (./patchperf test installs it into target/b4-venv with pip; \
             PATCHPERF_B4 names another)"
                .into(),
        )
    }

    /// Whether b4 runs in a network namespace without a network.
    pub fn isolated(&self) -> bool {
        self.isolated
    }

    /// b4 in `dir` with `home` as its `HOME` (and cache), offline, its
    /// arguments still to add.
    pub fn command(&self, dir: &Path, home: &Path) -> Command {
        let mut cmd = if self.isolated {
            let mut c = Command::new("unshare");
            c.arg("-n").arg(&self.program);
            c
        } else {
            Command::new(&self.program)
        };
        cmd.env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(dir)
            .args(["--offline-mode", "-c", "b4.attestation-policy=off"]);
        cmd
    }

    /// `b4 am -m <mbox> -o <dir>` (with `-v <version>` when given).
    pub fn am(&self, mbox_file: &Path, version: Option<u32>) -> Am {
        let work = tempfile::tempdir().unwrap();
        let out = work.path().join("out");
        let mut cmd = self.command(work.path(), work.path());
        cmd.args(["am", "--no-cover"])
            .arg("-m")
            .arg(mbox_file)
            .arg("-o")
            .arg(&out)
            .args(["-n", "am.mbx"]);
        if let Some(v) = version {
            cmd.args(["-v", &v.to_string()]);
        }
        let output = cmd.output().expect("b4 runs");
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.code().is_some_and(|c| c <= 1) && !log.contains("Traceback"),
            "b4 am failed: {log}"
        );
        let missing = log
            .lines()
            .filter_map(|l| l.trim().strip_prefix("ERROR: missing ["))
            .filter_map(|l| l.split('/').next()?.parse().ok())
            .collect();
        let patches = std::fs::read(out.join("am.mbx"))
            .map(|bytes| patches_of(&bytes))
            .unwrap_or_default();
        Am { patches, missing }
    }
}

/// The patches of an am-ready mbox (b4's or ours) as compared: each
/// message read by the series parser the runner applies with.
pub fn patches_of(mbox_bytes: &[u8]) -> Vec<Patch> {
    split_mbox(mbox_bytes)
        .unwrap()
        .iter()
        .map(|raw| {
            let text = String::from_utf8_lossy(raw);
            let message = mbox::Message::read(&text, 0).unwrap();
            let (_, body) = text.split_once("\n\n").unwrap_or_default();
            (
                message.subject,
                message.mailbox,
                diff_of(&decoded_body(raw, body)),
            )
        })
        .collect()
}

/// The body as text: b4 writes its mbox in 8bit UTF-8, we too, so the
/// text after the headers is the body; a part in another transfer
/// encoding is read through the list mail reader.
fn decoded_body(raw: &[u8], body: &str) -> String {
    let encoded = String::from_utf8_lossy(raw).lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("content-transfer-encoding:")
            && !l.contains("8bit")
            && !l.contains("7bit")
    });
    if encoded {
        patchperf_common::mail::Message::read(raw).unwrap().body
    } else {
        body.to_string()
    }
}

/// The diff of a patch: from its first `diff --git` line to the signature
/// (`-- `) or the end. Empty lines are left out: a diff has none (an empty
/// context line is a space), but b4 puts two after a diff's `index` line
/// when the patch came as an attachment (`git format-patch --attach`): it
/// reads the lines before `--- a/` as the commit message.
pub fn diff_of(body: &str) -> String {
    let mut diff = String::new();
    let mut inside = false;
    for line in body.lines() {
        inside |= line.starts_with("diff --git ");
        if inside && !line.is_empty() {
            if line == "-- " {
                break;
            }
            diff.push_str(line);
            diff.push('\n');
        }
    }
    diff.trim_end().to_string()
}
