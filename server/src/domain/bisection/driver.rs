//! The bisection driver: takes each running bisection one step once its
//! probes are settled — ends it, or queues the next probe — under the
//! bisection's row lock, so servers sharing the database make each probe
//! once; the `bisection-driver` worker runs it for every running one.

use std::collections::BTreeMap;
use std::time::Duration;

use patchperf_common::api::{BisectionOutcome, BisectionStatus, OutcomeKind};
use patchperf_common::bisect::{self, Judgement, Next};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::mbox;
use sqlx::PgConnection;

use crate::db::bisections::BisectionRow;
use crate::db::comparisons::ProbeRow;
use crate::domain::Context;
use crate::domain::comparison::{self, Order, Origin};
use crate::domain::context::workers::{Done, Worker};
use crate::{Error, db};

use super::assess::assess;
use super::series_len;
use super::wording::{found, not_reproducible, one_of};

/// How often the driver looks at running bisections.
const POLL: Duration = Duration::from_secs(2);

/// Takes the bisection one step: when every probe is settled, ends it or
/// queues the next probe.
pub async fn advance(ctx: &Context, id: i64) -> Result<(), Error> {
    let mut tx = ctx.db.begin().await?;
    if db::bisections::lock(&mut tx, id).await? != Some(BisectionStatus::Running) {
        return Ok(());
    }
    let b = db::bisections::find(&mut *tx, id)
        .await?
        .ok_or_else(|| Error::Internal(format!("bisection {id} vanished")))?;
    let rows = db::comparisons::probes(&mut *tx, id).await?;
    if rows.iter().any(|p| !p.status.is_final()) {
        return Ok(());
    }
    if rows.iter().any(|p| p.status == ComparisonStatus::Cancelled) {
        db::bisections::finish(&mut tx, id, BisectionStatus::Cancelled, None).await?;
        tx.commit().await?;
        return Ok(());
    }
    let n = series_len(ctx, &b).await?;
    let a = assess(ctx, &b, n).await?;
    let settle = match (a.end, &a.end_failure) {
        (_, Some(why)) => Some((
            BisectionStatus::Failed,
            BisectionOutcome {
                kind: OutcomeKind::Failed,
                first_bad: None,
                candidates: Vec::new(),
                summary: why.clone(),
            },
        )),
        (None, None) => {
            queue_probe(ctx, &mut tx, &b, n, &rows).await?;
            None
        }
        (Some(end), None) if !bisect::reproduced(end) => Some((
            BisectionStatus::Done,
            BisectionOutcome {
                kind: OutcomeKind::NotReproducible,
                first_bad: None,
                candidates: Vec::new(),
                summary: not_reproducible(&b, end),
            },
        )),
        (Some(_), None) => {
            let judged: BTreeMap<usize, Judgement> = a
                .probes
                .iter()
                .filter_map(|p| Some((usize::try_from(p.row.probe).ok()?, p.judgement?)))
                .collect();
            match bisect::next(n, &judged) {
                Next::Probe(k) => {
                    queue_probe(ctx, &mut tx, &b, k, &rows).await?;
                    None
                }
                Next::Found(k) => Some((
                    BisectionStatus::Done,
                    BisectionOutcome {
                        kind: OutcomeKind::Found,
                        first_bad: u32::try_from(k).ok(),
                        candidates: Vec::new(),
                        summary: found(ctx, &b, k, &a).await?,
                    },
                )),
                Next::OneOf(ks) => Some((
                    BisectionStatus::Done,
                    BisectionOutcome {
                        kind: OutcomeKind::OneOf,
                        first_bad: None,
                        summary: one_of(ctx, &b, &ks).await?,
                        candidates: ks.iter().filter_map(|&k| u32::try_from(k).ok()).collect(),
                    },
                )),
            }
        }
    };
    if let Some((status, outcome)) = settle {
        db::bisections::finish(&mut tx, id, status, Some(&outcome)).await?;
        tracing::info!(bisection = id, outcome = %outcome.summary, "bisection ended");
    }
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    Ok(())
}

/// Queues the probe of commit `k`: the good end against patches 1..k, on
/// the bisection's machine.
async fn queue_probe(
    ctx: &Context,
    conn: &mut PgConnection,
    b: &BisectionRow,
    k: usize,
    earlier: &[ProbeRow],
) -> Result<i64, Error> {
    let (text, _) = db::patches::mbox(&mut *conn, b.series_id).await?;
    let prefix = mbox::prefix::prefix(&text, k)
        .ok_or_else(|| Error::Internal(format!("bisection {}: no commit {k}", b.id)))?;
    let machine = match b
        .machine_id
        .or_else(|| earlier.iter().find_map(|p| p.machine_id))
    {
        Some(id) => db::machines::find(&mut *conn, id)
            .await?
            .map(|m| (m.id, m.inventory_json())),
        None => None,
    };
    let order = Order {
        origin: Origin::Probe {
            bisection_id: b.id,
            position: i32::try_from(k).unwrap_or(i32::MAX),
        },
        kind: ComparisonKind::Ab,
        base: b.base.0.clone(),
        mbox: prefix,
        per_patch: false,
        commits: Vec::new(),
        git_range: None,
        commit: b.commits.get(k - 1).cloned(),
        setup: b.setup(),
        params: b.params.0.clone(),
        run_length_pending: false,
        machine,
        seed: (b.order_seed as u64).wrapping_add(k as u64),
        submitted_by: b.submitted_by,
        carried: None,
    };
    let id = comparison::queue(conn, &order, ctx.config.max_attempts).await?;
    tracing::info!(
        bisection = b.id,
        probe = k,
        comparison = id,
        "bisection probe queued"
    );
    Ok(id)
}

/// Advances every running bisection; how many there were.
pub async fn advance_all(ctx: &Context) -> Result<usize, Error> {
    let running = db::bisections::running(&ctx.db).await?;
    for &id in &running {
        if let Err(e) = advance(ctx, id).await {
            tracing::warn!(bisection = id, error = %e, "advancing the bisection failed");
        }
    }
    Ok(running.len())
}

/// Starts the `bisection-driver` worker: [`advance_all`] every [`POLL`].
pub fn spawn_driver(ctx: &Context) -> tokio::task::JoinHandle<()> {
    Worker::every("bisection-driver", POLL)
        .woken_by(&ctx.comparison_settled)
        .spawn(ctx, |ctx| async move {
            Ok(Done::Handled(advance_all(&ctx).await?))
        })
}
