//! `patchperf-server backup FILE` and `restore FILE`: the database and the
//! list of mirrored repositories, out and back in (the file's layout is
//! `crate::backup`'s). A restore goes into an empty database, brings it up
//! to this server's schema and clones the repositories again.

use std::time::Duration;

use chrono::Utc;

use super::database::Database;
use crate::backup::{self, Manifest};
use crate::cli::backup::{BackupArgs, MirrorArgs, RestoreArgs};
use crate::git::Mirrors;
use crate::postgres::Create;
use crate::{Config, Error};

/// The mirrors under `args`' directory, as an operator's command on the
/// server host reads them: the repositories the lab mirrored, wherever
/// they are (local paths and the lab's own network included).
fn mirrors(args: &MirrorArgs, local: bool, timeout: Duration) -> Mirrors {
    let defaults = Config::default();
    Mirrors::new(&Config {
        git_dir: args.git_dir.clone().unwrap_or(defaults.git_dir.clone()),
        local_git: local,
        allow_private_destinations: true,
        git_timeout: timeout,
        ..defaults
    })
}

/// Runs `backup`.
pub async fn backup(args: BackupArgs) -> Result<(), Error> {
    let database = Database::open(&args.db, Create::Never).await?;
    let result = async {
        let schema_version: Option<i64> =
            sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&database.pool)
                .await?;
        let git_mirrors = mirrors(&args.mirrors, true, Duration::from_secs(60))
            .urls()
            .await?;
        let manifest = Manifest {
            format: 1,
            created_at: Utc::now(),
            server_version: env!("CARGO_PKG_VERSION").to_string(),
            schema_version,
            git_mirrors,
        };
        let target = database.backup_target(&args.db)?;
        let file = args.file.clone();
        let written = manifest.clone();
        tokio::task::spawn_blocking(move || backup::write(&file, &target, &written))
            .await
            .map_err(|e| Error::Internal(format!("writing the backup: {e}")))??;
        Ok::<_, Error>(manifest)
    }
    .await;
    database.close().await;
    let manifest = result?;
    eprintln!(
        "backed up the database (schema {}) and {} mirrored repositories to {}",
        manifest.schema_version.unwrap_or(0),
        manifest.git_mirrors.len(),
        args.file.display()
    );
    Ok(())
}

/// Runs `restore`.
pub async fn restore(args: RestoreArgs) -> Result<(), Error> {
    let file = args.file.clone();
    let opened = tokio::task::spawn_blocking(move || backup::open(&file))
        .await
        .map_err(|e| Error::Internal(format!("reading the backup: {e}")))??;
    let database = Database::connect(&args.db, Create::IfMissing).await?;
    let result = async {
        let tables: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_tables
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
        )
        .fetch_one(&database.pool)
        .await?;
        if tables > 0 {
            return Err(Error::Setup(format!(
                "the database is not empty ({tables} tables): restore into an empty one \
                 (drop and create it again, or another --data-dir)"
            )));
        }
        let target = database.backup_target(&args.db)?;
        let dump = opened.dump.clone();
        tokio::task::spawn_blocking(move || backup::restore(&target, &dump))
            .await
            .map_err(|e| Error::Internal(format!("restoring: {e}")))??;
        // A backup of an older server: its schema brought up to this one's.
        database.migrate().await
    }
    .await;
    database.close().await;
    result?;
    let m = &opened.manifest;
    eprintln!(
        "restored the database of {} (schema {}, patchperf-server {})",
        m.created_at.format("%Y-%m-%d %H:%M UTC"),
        m.schema_version.unwrap_or(0),
        m.server_version
    );
    if args.no_clone {
        for url in &m.git_mirrors {
            println!("not cloned: {url}");
        }
        return Ok(());
    }
    let mirrors = mirrors(&args.mirrors, args.local_git, args.git_timeout);
    let mut failed = 0;
    for url in &m.git_mirrors {
        match mirrors.open(url, &[]).await {
            // Opened for nothing, a fresh mirror would be removed again.
            Ok(mut mirror) => {
                mirror.keep();
                eprintln!("cloned {url}");
            }
            Err(e) => {
                failed += 1;
                eprintln!("could not clone {url}: {e} (the server clones it when it needs it)");
            }
        }
    }
    if failed > 0 {
        eprintln!(
            "{failed} of {} repositories not cloned",
            m.git_mirrors.len()
        );
    }
    Ok(())
}
