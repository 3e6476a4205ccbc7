//! The server as a lab deploys it: its systemd unit, its container image
//! and compose file, the settings they carry.

mod container;
mod units;
