//! Many objects of one mirror read through one `git cat-file --batch`: a
//! mail archive's round reads up to thousands of messages, and one process
//! for all of them instead of one a message is what makes a first read of
//! a lore list take minutes rather than hours. The process runs in its own
//! group like every git command here ([`super::process`]), holds one git
//! slot for its life, and is killed when the batch is dropped; each answer
//! is bounded in size (an object over the cap is skipped, not kept) and in
//! time.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

use super::process::{self, Failure, Group, Groups};
use crate::Error;

/// Longest answer line read (`<oid> blob <size>`, or the name asked for
/// and `missing`): the names asked for are checked to be short.
const MAX_LINE: u64 = 512;

/// Longest object name asked for (`<40 hex>:m` is 42 bytes; a SHA-256
/// repository's 66).
const MAX_NAME: usize = 256;

/// What the batch found for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// A blob, whole.
    Blob(Vec<u8>),
    /// The name names nothing (a commit that removes the message).
    Missing,
    /// Something that is not a blob: its type.
    NotBlob(String),
    /// A blob larger than the cap: its size (its bytes were skipped).
    TooLarge(u64),
}

/// A running `git cat-file --batch`.
pub struct Batch {
    child: Child,
    group: Option<Group>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: JoinHandle<Result<Vec<u8>, Failure>>,
    timeout: Duration,
    _slot: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("child", &self.child.id())
            .field("open", &self.stdin.is_some())
            .finish_non_exhaustive()
    }
}

impl Batch {
    /// Starts `cmd` (a `git … cat-file --batch`) holding `slot`; each
    /// answer must come within `timeout`.
    pub(super) fn start(
        cmd: Command,
        groups: &Arc<Groups>,
        timeout: Duration,
        slot: OwnedSemaphorePermit,
    ) -> Result<Batch, Failure> {
        let (mut child, group) = process::spawn(cmd, groups, std::process::Stdio::piped())?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Failure::Broken("git's pipes were not captured".into()));
        };
        Ok(Batch {
            child,
            group: Some(group),
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(256 << 10, stdout),
            stderr: tokio::spawn(process::read_tail(stderr)),
            timeout,
            _slot: slot,
        })
    }

    /// The blob `name` names (`<commit>:m`), whole when it is at most `max`
    /// bytes; `what` names it in an error.
    pub async fn blob(&mut self, name: &str, max: usize, what: &str) -> Result<Object, Error> {
        self.answer(name, max)
            .await
            .map_err(|failure| super::failed(what, failure))
    }

    async fn answer(&mut self, name: &str, max: usize) -> Result<Object, Failure> {
        if name.is_empty() || name.len() > MAX_NAME || name.contains(['\n', '\r', '\0']) {
            return Err(Failure::Broken(format!("not an object name: {name:?}")));
        }
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.ask(name, max)).await {
            Ok(Err(Failure::Broken(why))) => Err(self.why_broken(why).await),
            Ok(answer) => answer,
            Err(_) => Err(Failure::TimedOut(timeout)),
        }
    }

    async fn ask(&mut self, name: &str, max: usize) -> Result<Object, Failure> {
        let broken = |e: std::io::Error| Failure::Broken(format!("talking to git cat-file: {e}"));
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Failure::Broken("the batch is closed".into()))?;
        stdin
            .write_all(format!("{name}\n").as_bytes())
            .await
            .map_err(broken)?;
        stdin.flush().await.map_err(broken)?;
        let mut line = Vec::new();
        (&mut self.stdout)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .await
            .map_err(broken)?;
        let line = String::from_utf8_lossy(&line);
        let Some(line) = line.strip_suffix('\n') else {
            return Err(Failure::Broken(format!(
                "git cat-file's answer ended early: {line:?}"
            )));
        };
        if line.strip_suffix(" missing").is_some() || line.ends_with(" ambiguous") {
            return Ok(Object::Missing);
        }
        let mut words = line.split(' ');
        let (Some(_oid), Some(kind), Some(size), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(Failure::Broken(format!("git cat-file answered {line:?}")));
        };
        let size: u64 = size
            .parse()
            .map_err(|_| Failure::Broken(format!("git cat-file answered {line:?}")))?;
        // The contents and the line end after them.
        let whole = size + 1;
        let fits = usize::try_from(size).is_ok_and(|s| s <= max);
        if kind != "blob" || !fits {
            let skipped =
                tokio::io::copy(&mut (&mut self.stdout).take(whole), &mut tokio::io::sink())
                    .await
                    .map_err(broken)?;
            if skipped != whole {
                return Err(Failure::Broken("git cat-file's answer ended early".into()));
            }
            return Ok(if kind == "blob" {
                Object::TooLarge(size)
            } else {
                Object::NotBlob(kind.to_string())
            });
        }
        let mut blob = vec![0; usize::try_from(whole).unwrap_or(usize::MAX)];
        self.stdout.read_exact(&mut blob).await.map_err(broken)?;
        if blob.pop() != Some(b'\n') {
            return Err(Failure::Broken("git cat-file's answer is misframed".into()));
        }
        Ok(Object::Blob(blob))
    }

    /// What git said when its pipe broke: it ended (a corrupt repository, a
    /// server stopping), and its last words say why.
    async fn why_broken(&mut self, why: String) -> Failure {
        self.stdin = None;
        if let Some(group) = self.group.take() {
            let _ = process::finish(&mut self.child, group).await;
        }
        match (&mut self.stderr).await {
            Ok(Ok(tail)) if !tail.is_empty() => Failure::Failed(format!(
                "git cat-file: {}",
                String::from_utf8_lossy(&tail).trim()
            )),
            _ => Failure::Broken(why),
        }
    }

    /// Ends the batch: git reads the end of its input and exits.
    pub async fn close(self) -> Result<(), Error> {
        self.end()
            .await
            .map_err(|failure| super::failed("git cat-file", failure))
    }

    async fn end(mut self) -> Result<(), Failure> {
        self.stdin = None;
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let timeout = self.timeout;
        let status = tokio::time::timeout(timeout, process::finish(&mut self.child, group))
            .await
            .map_err(|_| Failure::TimedOut(timeout))??;
        if status.success() {
            Ok(())
        } else {
            Err(Failure::Failed(format!("git cat-file failed ({status})")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    fn git(dir: &std::path::Path, args: &[&str], input: Option<&[u8]>) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.unwrap_or_default())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    async fn batch(dir: &std::path::Path, groups: &Arc<Groups>) -> Batch {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(["cat-file", "--batch"]);
        let slot = Arc::new(Semaphore::new(1)).acquire_owned().await.unwrap();
        Batch::start(cmd, groups, Duration::from_secs(30), slot).unwrap()
    }

    #[tokio::test]
    async fn blobs_are_read_whole_skipped_when_too_large_and_missing_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"], None);
        // Bytes a line reader would trip on: no final newline, a NUL, CR.
        let small: &[u8] = b"From: a\r\n\0binary\nno end";
        let blob = git(dir.path(), &["hash-object", "-w", "--stdin"], Some(small));
        let large = vec![b'x'; 10_000];
        let big = git(dir.path(), &["hash-object", "-w", "--stdin"], Some(&large));
        let tree = git(
            dir.path(),
            &["mktree"],
            Some(format!("100644 blob {blob}\tm\n").as_bytes()),
        );
        let groups = Arc::new(Groups::default());
        let mut b = batch(dir.path(), &groups).await;
        let mut get = async |name: &str, max| b.answer(name, max).await;
        assert_eq!(get(&blob, 100).await, Ok(Object::Blob(small.to_vec())));
        assert_eq!(get(&big, 100).await, Ok(Object::TooLarge(10_000)));
        let m = format!("{tree}:m");
        assert_eq!(get(&m, 100).await, Ok(Object::Blob(small.to_vec())));
        let gone = format!("{tree}:gone");
        assert_eq!(get(&gone, 100).await, Ok(Object::Missing));
        assert_eq!(
            get(&tree, 100_000).await,
            Ok(Object::NotBlob("tree".into()))
        );
        // Still in step after the skips.
        assert_eq!(get(&big, 20_000).await, Ok(Object::Blob(large)));
        assert!(get("a\nb", 10).await.is_err());
        assert_eq!(groups.running(), 1);
        b.close().await.unwrap();
        assert_eq!(groups.running(), 0);
    }

    #[tokio::test]
    async fn a_dropped_batch_kills_its_git() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"], None);
        let groups = Arc::new(Groups::default());
        let b = batch(dir.path(), &groups).await;
        assert_eq!(groups.running(), 1);
        drop(b);
        assert_eq!(groups.running(), 0);
    }
}
