//! Results that could not be delivered wait here on disk, so a server that
//! is down (or a network that is out) loses nothing: run uploads and job
//! finishes are written as one JSON file each and delivered in the order
//! they were written, at the agent's next chance.
//!
//! Files are written to a temporary name and renamed, so a crash never
//! leaves half an entry. What a delivery does with an entry depends on the
//! answer:
//!
//! - taken (2xx): the entry is removed;
//! - no answer, 408 or 429 (the server is down, or asks to come back
//!   later): the pass stops and every entry waits in order;
//! - 401 or 403 (the token is unknown, revoked or of the wrong kind, or
//!   the machine belongs to another token): the pass stops and every entry
//!   waits, since starting the agent again with the right token delivers
//!   them; the agent itself stops on the same answer to its next call;
//! - any other 4xx (the lease is gone, the job is unknown, the run is
//!   invalid): refused for good, the entry moves to `rejected/` with the
//!   reason beside it, for a human to look at, and the pass goes on;
//! - 5xx: counted in the entry. Until [`STUCK_AFTER`] such answers the pass
//!   stops there, as for a server that is down. After that the entry no
//!   longer holds up the ones behind it: the pass tries it first, in its
//!   place, then goes on; once the server takes a later entry in the same
//!   pass (so it works, but fails on this one) the entry moves to
//!   `rejected/` too. A server that fails on everything takes nothing, so
//!   nothing is rejected and the order holds when it comes back.
//!
//! Nothing the server can never take is retried forever, and nothing is
//! dropped silently.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use patchperf_common::protocol::{FinishRequest, RunUpload};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::agent::client::{Client, Lease};
use crate::agent::log::agent_log;

/// What a spooled entry delivers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "body", rename_all = "lowercase")]
pub enum Item {
    /// `POST /api/v1/jobs/{id}/runs`.
    Upload(Box<RunUpload>),
    /// `POST /api/v1/jobs/{id}/finish`.
    Finish(FinishRequest),
}

/// 5xx answers to one entry after which it stops holding up the entries
/// behind it.
pub const STUCK_AFTER: u32 = 5;

/// One spooled request and the lease it was made under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The lease.
    pub lease: Lease,
    /// The request.
    pub item: Item,
    /// 5xx answers the server gave to this entry so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_errors: u32,
}

impl Entry {
    /// A new entry: `item` under `lease`, not tried yet.
    pub fn new(lease: Lease, item: Item) -> Entry {
        Entry {
            lease,
            item,
            server_errors: 0,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a failed delivery attempt means for the entry.
enum Outcome {
    /// No answer, or one that says to wait: everything waits in order.
    Wait,
    /// The token may not deliver it; a restart with the right one can.
    Unauthorized,
    /// The server failed on it (5xx).
    Failed,
    /// The server (or the file) will never be good for it.
    Refused,
}

impl Outcome {
    fn of(error: &Error) -> Outcome {
        match error {
            Error::Unreachable(_) => Outcome::Wait,
            Error::Server { status, .. } => match status {
                408 | 429 => Outcome::Wait,
                401 | 403 => Outcome::Unauthorized,
                500.. => Outcome::Failed,
                _ => Outcome::Refused,
            },
            _ => Outcome::Refused,
        }
    }
}

/// What a delivery pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Entries the server took.
    pub delivered: usize,
    /// Entries the server refused for good (moved to `rejected/`).
    pub rejected: usize,
    /// Entries still waiting (the server could not be reached, failed on
    /// them, or refused the token).
    pub remaining: usize,
    /// Of those, entries the server keeps failing on (see [`STUCK_AFTER`])
    /// that were passed over so that the ones behind them could go.
    pub passed_over: usize,
}

/// A spool directory.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    counter: AtomicU64,
    /// One delivery at a time: the jobs an agent runs at once each deliver
    /// (their reporters, their finishes), and two passes at once would
    /// send entries twice and trip over each other's removals.
    delivering: Mutex<()>,
}

impl Spool {
    /// Opens (creating) the spool at `dir`.
    pub fn open(dir: &Path) -> Result<Spool, Error> {
        std::fs::create_dir_all(dir.join("rejected"))
            .map_err(|e| Error::io(format!("creating spool {}", dir.display()), e))?;
        Ok(Spool {
            dir: dir.to_path_buf(),
            counter: AtomicU64::new(0),
            delivering: Mutex::new(()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes an entry; it is delivered after every entry written before it.
    pub fn push(&self, entry: &Entry) -> Result<PathBuf, Error> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let name = format!("{nanos:024}-{n:06}-job{}.json", entry.lease.job_id);
        let path = self.dir.join(&name);
        write_entry(&path, entry)?;
        Ok(path)
    }

    /// Entries waiting, oldest first.
    pub fn pending(&self) -> Result<Vec<PathBuf>, Error> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(|e| Error::io(format!("reading spool {}", self.dir.display()), e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && p.file_name()
                        .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pending().map_or(true, |p| p.is_empty())
    }

    /// Delivers waiting entries in order, as the module's documentation
    /// says: until the server cannot be reached (the rest wait for the next
    /// pass), refusing for good what it refuses, never stopping for long at
    /// one entry it keeps failing on.
    pub fn deliver(&self, client: &Client) -> Result<Delivery, Error> {
        let _one = self.delivering.lock().unwrap_or_else(|e| e.into_inner());
        let pending = self.pending()?;
        let mut done = Delivery::default();
        // Stuck entries passed over in this pass, with the server's answer.
        let mut passed_over: Vec<(&PathBuf, Error)> = Vec::new();
        for (i, path) in pending.iter().enumerate() {
            let mut entry = match read_entry(path) {
                Ok(entry) => entry,
                Err(e) => {
                    self.reject(path, &e, "the entry cannot be read")?;
                    done.rejected += 1;
                    continue;
                }
            };
            let sent = match &entry.item {
                Item::Upload(upload) => client.upload(entry.lease, upload).map(|_| ()),
                Item::Finish(finish) => client.finish(entry.lease, finish),
            };
            let why = match sent {
                Ok(()) => {
                    std::fs::remove_file(path)
                        .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                    done.delivered += 1;
                    // The server works: it is the entries passed over that
                    // it cannot take.
                    for (stuck, why) in passed_over.drain(..) {
                        let verdict = format!(
                            "the server failed on it {STUCK_AFTER} times or more while taking later entries"
                        );
                        self.reject(stuck, &why, &verdict)?;
                        done.rejected += 1;
                    }
                    continue;
                }
                Err(why) => why,
            };
            match Outcome::of(&why) {
                Outcome::Failed => {
                    entry.server_errors += 1;
                    write_entry(path, &entry)?;
                    if entry.server_errors < STUCK_AFTER {
                        done.remaining = pending.len() - i;
                        break;
                    }
                    agent_log!(
                        "the server failed {} times on spooled {} ({why}); \
                         trying the entries behind it",
                        entry.server_errors,
                        file_name(path)
                    );
                    passed_over.push((path, why));
                }
                Outcome::Wait => {
                    done.remaining = pending.len() - i;
                    break;
                }
                Outcome::Unauthorized => {
                    agent_log!(
                        "the server refused the token for spooled {} ({why}); \
                         everything waits for an agent with a token that may deliver it",
                        file_name(path)
                    );
                    done.remaining = pending.len() - i;
                    break;
                }
                Outcome::Refused => {
                    self.reject(path, &why, "the server refused it for good")?;
                    done.rejected += 1;
                }
            }
        }
        done.passed_over = passed_over.len();
        done.remaining += passed_over.len();
        Ok(done)
    }

    /// Moves the entry at `path` to `rejected/`, with `verdict` and the
    /// server's last answer in a `.error` file beside it.
    fn reject(&self, path: &Path, why: &Error, verdict: &str) -> Result<(), Error> {
        let target = self.dir.join("rejected").join(file_name(path));
        agent_log!(
            "spooled {}: {verdict} ({why}); kept in {}, going on",
            file_name(path),
            target.display()
        );
        std::fs::rename(path, &target)
            .map_err(|e| Error::io(format!("moving {} to rejected/", path.display()), e))?;
        let mut reason = target.clone().into_os_string();
        reason.push(".error");
        std::fs::write(&reason, format!("{verdict}: {why}\n"))
            .map_err(|e| Error::io("writing the rejection reason", e))
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Writes `entry` to `path` through a temporary name, so a crash leaves
/// the old entry or the new one, never half of one.
fn write_entry(path: &Path, entry: &Entry) -> Result<(), Error> {
    let mut tmp = path.to_path_buf();
    tmp.set_file_name(format!(".{}.tmp", file_name(path)));
    let text = serde_json::to_vec_pretty(entry).map_err(Error::json)?;
    std::fs::write(&tmp, text).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(format!("renaming {}", tmp.display()), e))
}

fn read_entry(path: &Path) -> Result<Entry, Error> {
    let text =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    serde_json::from_slice(&text).map_err(|e| Error::Format {
        what: path.display().to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchperf_common::protocol::FailureReason;

    fn finish(job_id: i64) -> Entry {
        Entry::new(
            Lease {
                job_id,
                machine_id: 1,
                attempt: 1,
            },
            Item::Finish(FinishRequest::Failed {
                reason: FailureReason::BootFailed,
                detail: "no console".into(),
                log_tail: String::new(),
            }),
        )
    }

    #[test]
    fn entries_come_back_in_the_order_they_were_written() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert!(spool.is_empty());
        for job in [3, 1, 2] {
            spool.push(&finish(job)).unwrap();
        }
        let jobs: Vec<i64> = spool
            .pending()
            .unwrap()
            .iter()
            .map(|p| read_entry(p).unwrap().lease.job_id)
            .collect();
        assert_eq!(jobs, [3, 1, 2]);
    }

    #[test]
    fn an_unreachable_server_leaves_every_entry_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        spool.push(&finish(1)).unwrap();
        spool.push(&finish(2)).unwrap();
        // Port 9 on loopback: nothing listens, the connection is refused.
        let client = Client::new("http://127.0.0.1:9", "t");
        let d = spool.deliver(&client).unwrap();
        assert_eq!(
            d,
            Delivery {
                delivered: 0,
                rejected: 0,
                remaining: 2,
                passed_over: 0,
            }
        );
        assert_eq!(spool.pending().unwrap().len(), 2);
    }
}
