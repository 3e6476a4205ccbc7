//! `patchperf-server prune --older-than-days N [--dry-run]`: one pass of
//! the retention policy (`domain::retention`), with what it removed (or,
//! dry, would remove).

use std::time::Duration;

use super::database::Database;
use crate::Error;
use crate::cli::backup::PruneArgs;
use crate::domain::retention;
use crate::postgres::Create;

/// Runs `prune`.
pub async fn run(args: PruneArgs) -> Result<(), Error> {
    let database = Database::open(&args.db, Create::Never).await?;
    let older_than = Duration::from_secs(args.older_than_days * 86_400);
    let result = if args.dry_run {
        retention::prune_dry_run(&database.pool, older_than).await
    } else {
        retention::prune(&database.pool, older_than).await
    };
    database.close().await;
    let pruned = result?;
    println!(
        "{} {} comparisons finished more than {} days ago: {} per-second series, \
         {} perf-profile values, samples of {} runs",
        if args.dry_run {
            "would prune"
        } else {
            "pruned"
        },
        pruned.comparisons,
        args.older_than_days,
        pruned.removed.series,
        pruned.removed.profile_values,
        pruned.removed.runs_sampled
    );
    Ok(())
}
