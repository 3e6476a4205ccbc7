//! The server's API, tested over HTTP against a real Postgres: each test
//! gets a fresh database from `#[sqlx::test]` (DATABASE_URL must point at a
//! server where it may create databases; `./patchperf test` provides one).

mod bad_input;
mod bisection_pages;
mod bisections;
#[path = "../report/browser.rs"]
mod browser;
mod change_order;
mod comparisons;
mod compression;
mod destinations;
mod git_limits;
mod git_mirrors;
mod git_repo;
mod helpers;
mod leases;
mod lifecycle;
mod list_archive;
mod list_messages;
mod list_pages;
mod lists;
mod machines;
mod mail;
mod mail_hostile;
mod names;
mod nul;
mod openapi;
mod ownership;
mod per_patch;
mod private_postgres;
mod private_reads;
mod prometheus;
mod protocol;
mod push_kill;
mod ranges;
mod run_length;
mod tokens;
mod tree_pages;
mod trees;
mod uploads;
mod workers;
