//! `patchperf-server migrate [--status]`: apply the migrations this server
//! has and the database lacks, saying which (or, with `--status`, list
//! each with whether the database has it, applying nothing).

use super::database::Database;
use crate::Error;
use crate::cli::MigrateArgs;
use crate::postgres::Create;

/// Runs `migrate`.
pub async fn run(args: MigrateArgs) -> Result<(), Error> {
    if args.status {
        let database = Database::connect(&args.db, Create::Never).await?;
        let status = database.status().await;
        database.close().await;
        let status = status?;
        let pending = status.iter().filter(|(_, applied)| !applied).count();
        for (m, applied) in &status {
            println!("{} {m}", if *applied { "applied" } else { "pending" });
        }
        println!("{pending} pending of {}", status.len());
        return Ok(());
    }
    // Connected, not opened: opening migrates, and this pass must see
    // what it applies.
    let database = Database::connect(&args.db, Create::Never).await?;
    let schema = database.migrate().await;
    database.close().await;
    let schema = schema?;
    println!("{}", said(&schema));
    Ok(())
}

/// `applied 2 migrations: …; the schema is at V` or `nothing to apply: …`.
fn said(schema: &super::database::Schema) -> String {
    if schema.applied_now.is_empty() {
        return format!("nothing to apply: the schema is at {}", schema.version);
    }
    let each: Vec<String> = schema.applied_now.iter().map(ToString::to_string).collect();
    format!(
        "applied {} migration{}: {}; the schema is at {}",
        each.len(),
        if each.len() == 1 { "" } else { "s" },
        each.join(", "),
        schema.version
    )
}
