//! Fuzz targets for common's entry points, as proptest properties: the
//! runner protocol's bodies and `RunResult` (`protocol`), the CI API's
//! bodies and the submission checks (`api`), what goes into a mail from
//! outside (`mail`). The mbox parser's live beside it in `src/mbox/tests.rs`.
//!
//! Each property runs proptest's default 256 cases in `cargo test`;
//! `PROPTEST_CASES` raises that (`bench/fuzz.sh` runs them long).

mod api;
mod json;
mod mail;
mod protocol;
