//! The server as a lab deploys and keeps it: its systemd unit, its
//! container image and compose file, the settings files they carry, its
//! backups and restores, the pruning of bulky data, a rolling upgrade,
//! two servers on one database, and what its monitoring reads
//! (`/metrics`, the JSON log).

mod backup;
mod client;
mod container;
// The API tests' repositories; those use all of it, these a part.
#[allow(dead_code)]
#[path = "../api/git_repo.rs"]
mod git_repo;
mod lab;
mod monitoring;
mod retention;
mod settings;
mod two_servers;
mod units;
mod upgrade;
