//! Results that could not be delivered wait here on disk, so a server that
//! is down (or a network that is out) loses nothing: run uploads and job
//! finishes are written as one JSON file each and delivered in the order
//! they were written, at the agent's next chance.
//!
//! Files are written to a temporary name and renamed, so a crash never
//! leaves half an entry. An entry the server refuses for good (4xx: the
//! lease is gone, the run is invalid) moves to `rejected/` with the reason
//! beside it, for a human to look at; it is never retried or dropped
//! silently.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use patchperf_common::protocol::{FinishRequest, RunUpload};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::agent::client::{Client, Lease};

/// What a spooled entry delivers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "body", rename_all = "lowercase")]
pub enum Item {
    /// `POST /api/v1/jobs/{id}/runs`.
    Upload(Box<RunUpload>),
    /// `POST /api/v1/jobs/{id}/finish`.
    Finish(FinishRequest),
}

/// One spooled request and the lease it was made under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The lease.
    pub lease: Lease,
    /// The request.
    pub item: Item,
}

/// What a delivery pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Entries the server took.
    pub delivered: usize,
    /// Entries the server refused for good (moved to `rejected/`).
    pub rejected: usize,
    /// Entries still waiting (the server could not be reached).
    pub remaining: usize,
}

/// A spool directory.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    counter: AtomicU64,
}

impl Spool {
    /// Opens (creating) the spool at `dir`.
    pub fn open(dir: &Path) -> Result<Spool, Error> {
        std::fs::create_dir_all(dir.join("rejected"))
            .map_err(|e| Error::io(format!("creating spool {}", dir.display()), e))?;
        Ok(Spool {
            dir: dir.to_path_buf(),
            counter: AtomicU64::new(0),
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
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let text = serde_json::to_vec_pretty(entry).map_err(Error::json)?;
        std::fs::write(&tmp, text)
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, &path)
            .map_err(|e| Error::io(format!("renaming {}", tmp.display()), e))?;
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

    /// Delivers waiting entries in order until one cannot be delivered
    /// because the server is unreachable (the rest wait for the next pass).
    pub fn deliver(&self, client: &Client) -> Result<Delivery, Error> {
        let pending = self.pending()?;
        let mut done = Delivery::default();
        for (i, path) in pending.iter().enumerate() {
            let sent = read_entry(path).and_then(|entry| match &entry.item {
                Item::Upload(upload) => client.upload(entry.lease, upload).map(|_| ()),
                Item::Finish(finish) => client.finish(entry.lease, finish),
            });
            match sent {
                Ok(()) => {
                    std::fs::remove_file(path)
                        .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                    done.delivered += 1;
                }
                Err(e) if e.is_transient() => {
                    done.remaining = pending.len() - i;
                    return Ok(done);
                }
                Err(e) => {
                    self.reject(path, &e)?;
                    done.rejected += 1;
                }
            }
        }
        Ok(done)
    }

    fn reject(&self, path: &Path, why: &Error) -> Result<(), Error> {
        let name = path.file_name().unwrap_or_default();
        let target = self.dir.join("rejected").join(name);
        eprintln!(
            "patchperf-runner agent: the server refused spooled {} for good ({why}); kept in {}",
            name.to_string_lossy(),
            target.display()
        );
        std::fs::rename(path, &target)
            .map_err(|e| Error::io(format!("moving {} to rejected/", path.display()), e))?;
        let mut reason = target.clone().into_os_string();
        reason.push(".error");
        std::fs::write(&reason, format!("{why}\n"))
            .map_err(|e| Error::io("writing the rejection reason", e))
    }
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
        Entry {
            lease: Lease {
                job_id,
                machine_id: 1,
                attempt: 1,
            },
            item: Item::Finish(FinishRequest::Failed {
                reason: FailureReason::BootFailed,
                detail: "no console".into(),
                log_tail: String::new(),
            }),
        }
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
                remaining: 2
            }
        );
        assert_eq!(spool.pending().unwrap().len(), 2);
    }
}
