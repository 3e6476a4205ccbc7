//! What the tests of the server and the runner share, so each test binary
//! keeps only what is its own: the app over a fresh database with a token
//! of each kind and a client speaking the API in-process (`app`), the app
//! served on a loopback port (`server`), a test machine (`machine`), sample
//! patch series (`mbox`) and runs (`runs`), Debian's headless Chromium
//! (`chromium`), a real SMTP server (`smtp`), a public-inbox archive served
//! as lore serves one (`public_inbox`), the deployment files (`deploy`),
//! the server of the release before (`previous_release`), the kernel
//! tests' shared cache (`test_cache`), a linux git history made from
//! Debian's kernel source (`git_fixture`) and Prometheus' parser of a
//! `/metrics` answer (`openmetrics`).
//!
//! Databases come from `#[sqlx::test]` in the test itself; nothing here
//! starts Postgres.

pub mod app;
pub mod chromium;
pub mod deploy;
pub mod git_fixture;
pub mod machine;
pub mod mbox;
pub mod openmetrics;
pub mod previous_release;
pub mod public_inbox;
pub mod runs;
pub mod server;
pub mod smtp;
pub mod test_cache;

pub use app::{Answer, TestApp, test_config};
pub use server::{TestServer, database_url, free_port, token};
