//! Opening the database for any command: `DATABASE_URL`, or the private
//! cluster under the data directory; migrated before use.

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::cli::DatabaseArgs;
use crate::postgres::{self, Create, PrivatePostgres};
use crate::{Error, MIGRATOR, backup};

/// A migrated pool, and the private cluster behind it when there is one.
#[derive(Debug)]
pub struct Database {
    /// The pool.
    pub pool: PgPool,
    private: Option<PrivatePostgres>,
}

impl Database {
    /// Connects (starting the private cluster if needed, creating it only
    /// as `create` allows) and migrates.
    pub async fn open(args: &DatabaseArgs, create: Create) -> Result<Self, Error> {
        let database = Self::connect(args, create).await?;
        match database.migrate().await {
            Ok(schema) => {
                let applied: Vec<String> =
                    schema.applied_now.iter().map(|m| m.to_string()).collect();
                tracing::info!(
                    schema = schema.version,
                    applied = applied.len(),
                    migrations = %applied.join(", "),
                    "database schema"
                );
                Ok(database)
            }
            Err(e) => {
                database.close().await;
                Err(e)
            }
        }
    }

    /// Connects (starting the private cluster if needed), leaving the
    /// schema as it is: a restore fills an empty database first.
    pub async fn connect(args: &DatabaseArgs, create: Create) -> Result<Self, Error> {
        let (options, private) = match &args.database_url {
            Some(url) => {
                let options: PgConnectOptions = url
                    .parse()
                    .map_err(|e| Error::Setup(format!("DATABASE_URL is not usable: {e}")))?;
                (options, None)
            }
            None => {
                let dir = args.data_dir.clone();
                let pg = tokio::task::spawn_blocking(move || PrivatePostgres::start(&dir, create))
                    .await
                    .map_err(|e| Error::Internal(format!("starting Postgres: {e}")))??;
                create_database(&pg).await?;
                (pg.connect_options(postgres::DATABASE), Some(pg))
            }
        };
        let pool = PgPoolOptions::new()
            .max_connections(20)
            // A request finds out in seconds that the database is gone,
            // not after sqlx's 30 s default.
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect_with(options)
            .await
            .map_err(|e| Error::Setup(format!("cannot connect to Postgres: {e}")))?;
        Ok(Database { pool, private })
    }

    /// Applies the migrations this server has and the database lacks;
    /// which those were, and the schema's version now.
    pub async fn migrate(&self) -> Result<Schema, Error> {
        let before = self.applied().await?;
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| Error::Setup(format!("database migration failed: {e}")))?;
        let applied_now = MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration() && !before.contains(&m.version))
            .map(|m| Migration {
                version: m.version,
                description: m.description.to_string(),
            })
            .collect();
        Ok(Schema {
            version: self.applied().await?.into_iter().max().unwrap_or(0),
            applied_now,
        })
    }

    /// Each migration this server has, and whether the database has it:
    /// what `migrate --status` prints, applying nothing.
    pub async fn status(&self) -> Result<Vec<(Migration, bool)>, Error> {
        let applied = self.applied().await?;
        Ok(MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .map(|m| {
                (
                    Migration {
                        version: m.version,
                        description: m.description.to_string(),
                    },
                    applied.contains(&m.version),
                )
            })
            .collect())
    }

    /// The versions of the migrations the database has (none before the
    /// first).
    async fn applied(&self) -> Result<Vec<i64>, Error> {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await?;
        if !exists {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// How pg_dump and pg_restore reach this database.
    pub fn backup_target(&self, args: &DatabaseArgs) -> Result<backup::Target, Error> {
        match (&self.private, &args.database_url) {
            (Some(pg), _) => Ok(backup::Target::private(pg, postgres::DATABASE)),
            (None, Some(url)) => backup::Target::url(url),
            (None, None) => Err(Error::Internal("a database with no address".into())),
        }
    }

    /// The private cluster's pid file, when this database is one.
    pub fn private_pid_file(&self) -> Option<std::path::PathBuf> {
        self.private.as_ref().map(PrivatePostgres::pid_file)
    }

    /// Closes the pool, then stops the private cluster if we started it.
    pub async fn close(mut self) {
        self.pool.close().await;
        if let Some(mut pg) = self.private.take() {
            let _ = tokio::task::spawn_blocking(move || pg.stop()).await;
        }
    }
}

async fn create_database(pg: &PrivatePostgres) -> Result<(), Error> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect_with(&pg.connect_options("postgres"))
        .await
        .map_err(|e| Error::Setup(format!("cannot connect to the private Postgres: {e}")))?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(postgres::DATABASE)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        // CREATE DATABASE takes no parameters; the name is our constant.
        sqlx::raw_sql(&format!("CREATE DATABASE {}", postgres::DATABASE))
            .execute(&mut conn)
            .await?;
    }
    conn.close().await?;
    Ok(())
}

/// One migration: its version (the file's timestamp) and description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    pub version: i64,
    pub description: String,
}

impl std::fmt::Display for Migration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.version, self.description)
    }
}

/// What a migration pass did.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The newest migration the database has now.
    pub version: i64,
    /// The migrations this pass applied, oldest first.
    pub applied_now: Vec<Migration>,
}
