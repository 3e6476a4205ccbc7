//! The server as a lab deploys it: its systemd unit, its container image
//! and compose file, the settings files they carry.

mod container;
mod settings;
mod units;
