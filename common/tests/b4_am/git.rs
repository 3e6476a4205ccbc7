//! Threads made the way kernel developers make them: commits in a real git
//! repository, `git format-patch` (`--cover-letter`, `-v2`, `--base`,
//! `--attach`) and `git send-email`, whose SMTP server here is a script
//! that keeps each message it is handed, byte for byte, as the list
//! would receive it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository with a base commit, and a place to capture mail.
#[derive(Debug)]
pub struct Repo {
    dir: tempfile::TempDir,
    sent: usize,
}

impl Repo {
    /// A new repository whose first commit (`base`) adds `fs/open.c`.
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo { dir, sent: 0 };
        std::fs::create_dir_all(repo.path().join("src/fs")).unwrap();
        std::fs::create_dir_all(repo.path().join("mail")).unwrap();
        std::fs::write(
            repo.path().join("capture.sh"),
            "#!/bin/sh\n# git send-email's SMTP server: keeps each message.\n\
             n=$(ls \"$CAPTURE\" | wc -l)\ncat > \"$CAPTURE/$(printf %04d \"$n\").eml\"\n",
        )
        .unwrap();
        let script = repo.path().join("capture.sh");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("fs/open.c", "int open(void)\n{\n\treturn 0;\n}\n");
        repo.commit(
            "Linus Torvalds <torvalds@linux-foundation.org>",
            "fs: base\n",
        );
        repo.git(&["tag", "base"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git in the work tree (`src/`), with this repository's own
    /// `HOME`; returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(self.path().join("src"))
            .env("HOME", self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("CAPTURE", self.path().join("mail"))
            .args([
                "-c",
                "user.name=Patch Sender",
                "-c",
                "user.email=sender@example.org",
            ])
            .args([
                "-c",
                &format!(
                    "sendemail.smtpserver={}",
                    self.path().join("capture.sh").display()
                ),
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Writes `text` to `file` in the work tree.
    pub fn write(&self, file: &str, text: &str) {
        std::fs::write(self.path().join("src").join(file), text).unwrap();
    }

    /// Commits everything as `author` with `message`.
    pub fn commit(&self, author: &str, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--author", author, "-m", message]);
    }

    /// `git format-patch ARGS -o <dir>`, the cover letter's placeholders
    /// filled with `cover` (subject, blurb); the files in order.
    pub fn format_patch(&self, args: &[&str], cover: Option<(&str, &str)>) -> Vec<PathBuf> {
        let out = tempfile::tempdir().unwrap().keep();
        let mut all = args.to_vec();
        all.extend(["-q", "-o", out.to_str().unwrap()]);
        self.git(&all);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        if let Some((subject, blurb)) = cover {
            let letter = &files[0];
            let text = std::fs::read_to_string(letter)
                .unwrap()
                .replace("*** SUBJECT HERE ***", subject)
                .replace("*** BLURB HERE ***", blurb);
            std::fs::write(letter, text).unwrap();
        }
        files
    }

    /// `git send-email` of `files` to the list with `args`; the messages
    /// the list got, in order.
    pub fn send(&mut self, files: &[PathBuf], args: &[&str]) -> Vec<Vec<u8>> {
        let mut all = vec![
            "send-email",
            "--confirm=never",
            "--quiet",
            "--to=linux-fsdevel@vger.kernel.org",
        ];
        all.extend(args);
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        all.extend(names.iter().map(String::as_str));
        self.git(&all);
        let mut captured: Vec<PathBuf> = std::fs::read_dir(self.path().join("mail"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        captured.sort();
        let new: Vec<Vec<u8>> = captured[self.sent..]
            .iter()
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        self.sent = captured.len();
        new
    }

    /// Message-ID of a captured message.
    pub fn id(message: &[u8]) -> String {
        patchperf_common::mail::Message::read(message)
            .unwrap()
            .id()
            .unwrap()
            .to_string()
    }

    /// The tree `git am` of `mbox` on `base` gives, and HEAD's tree.
    pub fn am_tree(&self, mbox_text: &str) -> (String, String) {
        let head = self.git(&["rev-parse", "HEAD^{tree}"]);
        let file = self.path().join("am.mbox");
        std::fs::write(&file, mbox_text).unwrap();
        self.git(&["checkout", "-q", "--detach", "base"]);
        self.git(&["am", "-q", file.to_str().unwrap()]);
        let applied = self.git(&["rev-parse", "HEAD^{tree}"]);
        self.git(&["checkout", "-q", "main"]);
        (applied.trim().to_string(), head.trim().to_string())
    }
}
