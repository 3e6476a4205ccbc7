//! Keeps the stored overall verdicts of finished comparisons current (see
//! `db::verdicts`): a comparison's verdict is computed once it is final and
//! again when its machine's noise floor changes, by a background task and,
//! for anything it has not reached yet, by the listing that needs it.

use std::time::Duration;

use patchperf_common::comparison::OverallVerdict;
use patchperf_common::report::format;

use super::ComparisonReport;
use super::verdict::verdict_view;
use crate::{AppState, Error, db};

/// How many stale verdicts one pass of the keeper recomputes.
const BATCH: i64 = 50;

/// The dashboard's one-line summary of a report: each (workload, nr_task)
/// with its headline metric's change and verdict.
pub fn headline(report: &ComparisonReport) -> String {
    report
        .groups
        .iter()
        .filter_map(|g| {
            g.comparison.headline_metric().map(|m| {
                format!(
                    "{} nr_task {}: {} {}",
                    g.comparison.header.workload,
                    g.comparison.header.nr_task,
                    format::change_text(m),
                    m.verdict.as_str()
                )
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Builds the report of a finished comparison and stores its verdict and
/// headline; returns them, or `None` when the comparison is gone or not
/// final.
pub async fn refresh(state: &AppState, id: i64) -> Result<Option<(OverallVerdict, String)>, Error> {
    let Some(from) = db::verdicts::fingerprint(&state.db, id).await? else {
        return Ok(None);
    };
    let Some(c) = db::comparisons::find(&state.db, id).await? else {
        return Ok(None);
    };
    if !c.status.is_final() {
        return Ok(None);
    }
    let report = super::load(state, &c).await?;
    let verdict = verdict_view(&report, String::new()).overall;
    let headline = headline(&report);
    db::verdicts::store(&state.db, id, verdict, &headline, from).await?;
    Ok(Some((verdict, headline)))
}

/// Recomputes up to [`BATCH`] stale verdicts; returns how many it stored.
/// A comparison whose report fails to build is logged and skipped, so one
/// cannot hold up the others.
pub async fn refresh_stale(state: &AppState) -> Result<usize, Error> {
    let mut stored = 0;
    for id in db::verdicts::stale(&state.db, BATCH).await? {
        match refresh(state, id).await {
            Ok(_) => stored += 1,
            Err(e) => tracing::warn!(comparison = id, error = %e, "cannot store its verdict"),
        }
    }
    Ok(stored)
}

/// Brings every stale verdict up to date before a listing filters by
/// verdict. The keeper leaves few behind; a server without it (tests, a
/// database just migrated) catches up here, a few batches per request.
pub async fn catch_up(state: &AppState) -> Result<(), Error> {
    for _ in 0..4 {
        if i64::try_from(refresh_stale(state).await?) != Ok(BATCH) {
            break;
        }
    }
    Ok(())
}

/// Fills in the verdict of listed comparisons that are final but have no
/// current stored verdict yet. One whose report fails to build is logged
/// and left without, so that it cannot take the listing down with it.
pub async fn fill(state: &AppState, listed: &mut [db::comparisons::ComparisonSummary]) {
    for s in listed.iter_mut() {
        if s.verdict.is_none() && s.status.is_final() {
            match refresh(state, s.id).await {
                Ok(Some((verdict, headline))) => {
                    s.verdict = Some(verdict);
                    s.headline = Some(headline);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(comparison = s.id, error = %e, "cannot store its verdict"),
            }
        }
    }
}

/// Spawns the task that stores verdicts as comparisons finish: it wakes
/// when jobs change (a finished job may have finished its comparison) and
/// every few seconds (cancellations and A/A comparisons finishing elsewhere).
pub fn spawn_keeper(state: &AppState) {
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            let wake = state.jobs_changed.notified();
            match refresh_stale(&state).await {
                // A full batch stored: more may be waiting.
                Ok(n) if i64::try_from(n) == Ok(BATCH) => continue,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "storing comparison verdicts failed"),
            }
            if state.db.is_closed() {
                return;
            }
            tokio::select! {
                () = wake => {}
                () = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        }
    });
}
