//! Reports stored in the database once per change of their inputs, and
//! the background builder that keeps them current: whatever changes a
//! report's inputs marks its comparison (`stale_reports`: a run
//! stored, a status change, boots added, the machine's A/A comparison
//! finishing), and the builder takes the marked ones, newest first, builds
//! each report once, stores it, and for a finished comparison stores its
//! overall verdict and dashboard headline (`db::verdicts`) for listings to
//! filter by. Its work follows what changed; listings and the dashboard
//! only ever read what it stored.

use std::time::Duration;

use patchperf_common::report::importance::HeadlineColumns;
use patchperf_common::report::{format, importance, summary};

use super::verdict::verdict_view;
use super::{ComparisonReport, load_shared};
use crate::domain::Context;
use crate::domain::context::workers::{Done, Worker};
use crate::domain::report::cache::Inputs;
use crate::{Error, db};

/// How many marked comparisons one pass of the builder takes.
const BATCH: i64 = 50;

/// How long the builder lets changes gather after a wake-up before it
/// looks: a boot uploads its runs one after another, and one build after
/// the last of them serves as well as one per run.
const SETTLE: Duration = Duration::from_millis(250);

/// How often the builder looks without being woken (changes made through
/// another server behind the same database, running comparisons that
/// waited for [`RUNNING_EVERY`]).
const POLL: Duration = Duration::from_secs(5);

/// How long a report whose build failed waits before the next try.
const RETRY: Duration = Duration::from_secs(60);

/// The least time between two builds of a running comparison's report by
/// the builder: its runs arrive one after another, and a reader opening
/// the page meanwhile gets the newest runs anyway (the request builds).
const RUNNING_EVERY: Duration = Duration::from_secs(5);

/// The dashboard's one-line summary of a report: each (workload, nr_task)
/// with its headline metric's change, verdict, name and 95% interval (`dup1
/// nr_task 1: +5.1% improvement of will-it-scale.per_process_ops, 95% CI
/// +4.9% … +5.3%`), so that an undecided −5% reads as unsure as it is; the
/// most important first ([`importance`]). An A/A calibration's says the
/// noise floor each kind of run measured instead (`dup1 nr_task 1: noise
/// floor ±0.075% → δ 0.15%`).
pub fn headline(report: &ComparisonReport) -> String {
    importance::by_importance(&report.groups, |g| &g.comparison)
        .into_iter()
        .filter_map(|g| {
            if let Some(answer) = summary::calibration_answer(&g.comparison) {
                let h = &g.comparison.header;
                return Some(format!("{} nr_task {}: {answer}", h.workload, h.nr_task));
            }
            g.comparison.headline_metric().map(|m| {
                let mut line = format!(
                    "{} nr_task {}: {}",
                    g.comparison.header.workload,
                    g.comparison.header.nr_task,
                    summary::change_phrase(&g.comparison, m),
                );
                let interval = format::interval_text(m);
                if !interval.is_empty() {
                    line.push_str(&format!(
                        ", {} CI {interval}",
                        g.comparison.policy.interval_label()
                    ));
                }
                if let Some(step) = &g.comparison.header.moved_by {
                    line.push_str(&format!(", from {step}"));
                }
                line
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The stored report of comparison `id` if it was built from `inputs`, or
/// whatever it was built from once the comparison was pruned. One that
/// cannot be decoded (written by another version) counts as none.
pub async fn read(
    ctx: &Context,
    id: i64,
    inputs: &Inputs,
) -> Result<Option<ComparisonReport>, Error> {
    let Some(stored) = db::reports::find(&ctx.db, id).await? else {
        return Ok(None);
    };
    let current = serde_json::from_value::<Inputs>(stored.inputs)
        .ok()
        .as_ref()
        == Some(inputs);
    // A pruned comparison's report is final: what it was built from is
    // partly gone (`domain::retention`).
    if !current && !crate::domain::retention::pruned(&ctx.db, id).await? {
        return Ok(None);
    }
    match ciborium::from_reader(stored.body.as_slice()) {
        Ok(report) => Ok(Some(report)),
        Err(e) => {
            tracing::warn!(comparison = id, error = %e, "stored report unreadable; building it");
            Ok(None)
        }
    }
}

/// Stores comparison `id`'s report built from `inputs`.
pub async fn write(
    ctx: &Context,
    id: i64,
    inputs: &Inputs,
    report: &ComparisonReport,
    took: Duration,
) -> Result<(), Error> {
    let mut body = Vec::new();
    ciborium::into_writer(report, &mut body)
        .map_err(|e| Error::Internal(format!("encoding the report of comparison {id}: {e}")))?;
    let inputs = serde_json::to_value(inputs)
        .map_err(|e| Error::Internal(format!("encoding report inputs: {e}")))?;
    let build_ms = i32::try_from(took.as_millis()).unwrap_or(i32::MAX);
    db::reports::store(&ctx.db, id, &inputs, &body, build_ms).await?;
    Ok(())
}

/// Brings comparison `id`'s stored report up to date (building it only if
/// the stored one is not current), and stores the overall verdict of a
/// finished one.
pub async fn refresh(ctx: &Context, id: i64) -> Result<(), Error> {
    let Some(c) = db::comparisons::find(&ctx.db, id).await? else {
        return Ok(());
    };
    let report = load_shared(ctx, &c).await?;
    if c.status.is_final() {
        // A parent's row names the step that moved each headline: its
        // steps have settled before it.
        let steps = super::steps::views(ctx, &c).await?;
        let report = super::steps::with_culprits(&report, &steps);
        let verdict = verdict_view(&report, String::new()).overall;
        let columns = HeadlineColumns::of(report.groups.iter().map(|g| &g.comparison));
        db::verdicts::store(&ctx.db, id, verdict, &headline(&report), columns.as_ref()).await?;
    }
    Ok(())
}

/// One pass of the builder: takes up to [`BATCH`] marked comparisons and
/// refreshes each; returns how many it took. A comparison whose report
/// fails to build is logged and tried again after [`RETRY`] (a database
/// that went away for a moment must not leave a verdict missing for good),
/// so one cannot hold up the others.
pub async fn build_stale(ctx: &Context) -> Result<usize, Error> {
    let mut conn = ctx.db.acquire().await?;
    let ids = db::reports::take_stale(&mut conn, BATCH, RUNNING_EVERY.as_secs_f64()).await?;
    drop(conn);
    for &id in &ids {
        if let Err(e) = refresh(ctx, id).await {
            tracing::warn!(comparison = id, error = %e, "cannot build its report; trying again later");
            if let Err(e) = db::reports::retry_later(&ctx.db, id, RETRY.as_secs_f64()).await {
                tracing::warn!(comparison = id, error = %e, "cannot mark its report to retry");
            }
        }
    }
    Ok(ids.len())
}

/// Starts the `report-builder` worker: it wakes when this server stored a
/// run or a job changed (a finished job may have finished its comparison),
/// lets changes settle for [`SETTLE`], and polls every [`POLL`] for changes
/// made elsewhere.
pub fn spawn_keeper(ctx: &Context) -> tokio::task::JoinHandle<()> {
    Worker::every("report-builder", POLL)
        .woken_by(&ctx.jobs_changed)
        .woken_by(&ctx.reports_stale)
        .settling(SETTLE)
        .spawn(ctx, |ctx| async move {
            let n = build_stale(&ctx).await?;
            // A full batch taken: more may be waiting.
            Ok(if i64::try_from(n) == Ok(BATCH) {
                Done::More(n)
            } else {
                Done::Handled(n)
            })
        })
}
