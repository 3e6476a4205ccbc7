//! `patchperf-server migrate`: opening the database applies the migrations;
//! then close it again.

use super::database::Database;
use crate::Error;
use crate::cli::DatabaseArgs;
use crate::postgres::Create;

/// Runs `migrate`.
pub async fn run(args: DatabaseArgs) -> Result<(), Error> {
    Database::open(&args, Create::Never).await?.close().await;
    Ok(())
}
