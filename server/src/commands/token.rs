//! `patchperf-server token create|list|revoke` on the server host.

use super::database::Database;
use crate::Error;
use crate::cli::token::{TokenAction, TokenArgs};
use crate::db;
use crate::domain::tokens;
use crate::postgres::Create;

/// Runs `token`.
pub async fn run(args: TokenArgs) -> Result<(), Error> {
    let database = Database::open(&args.db, Create::Never).await?;
    let result = action(&database, args.action).await;
    database.close().await;
    result
}

async fn action(database: &Database, action: TokenAction) -> Result<(), Error> {
    match action {
        TokenAction::Create { kind, name } => {
            let mut tx = database.pool.begin().await?;
            let created = tokens::create(&mut tx, kind, &name).await?;
            tx.commit().await?;
            eprintln!(
                "created {} token {} `{}`; it is shown only now:",
                created.kind, created.id, created.name
            );
            println!("{}", created.token);
        }
        TokenAction::List => {
            for t in db::tokens::list(&database.pool).await? {
                let revoked = t
                    .revoked_at
                    .map(|at| format!("revoked {}", at.format("%Y-%m-%d %H:%M")))
                    .unwrap_or_default();
                println!(
                    "{:>4}  {:<6}  {:<30}  created {}  {revoked}",
                    t.id,
                    t.kind,
                    t.name,
                    t.created_at.format("%Y-%m-%d %H:%M")
                );
            }
        }
        TokenAction::Revoke { id } => {
            let mut tx = database.pool.begin().await?;
            if !db::tokens::revoke(&mut tx, id).await? {
                return Err(Error::Setup(format!("no token {id}")));
            }
            tx.commit().await?;
            eprintln!("token {id} revoked");
        }
    }
    Ok(())
}
