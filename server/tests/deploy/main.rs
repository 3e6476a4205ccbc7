//! The server as a lab deploys and keeps it: its systemd unit, its
//! container image and compose file, the settings files they carry, its
//! backups and restores, the pruning of bulky data, a rolling upgrade.

mod backup;
mod container;
mod lab;
mod retention;
mod settings;
mod units;
mod upgrade;
