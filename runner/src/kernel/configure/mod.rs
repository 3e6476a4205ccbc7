//! Configure: one benchmark `.config` for both sides, the fragment fitted
//! to the tree's own Kconfig files and checked after `olddefconfig`
//! ([`config`]).

pub mod config;
