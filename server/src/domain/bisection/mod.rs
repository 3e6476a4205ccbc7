//! Bisection: find the first commit of a series (a git range, or a mailed
//! series' patches) that moves one metric. Each probe is an ordinary
//! comparison of the good end against commit k (patches 1..k), with the
//! report's statistics (interval, q, verdict) and more boots while it stays
//! undecided (its `max_runs`). The first probe checks that the ends differ
//! (unless the bisection starts from a comparison, whose report is that
//! check); then [`patchperf_common::bisect::next`] picks each probe from
//! the settled ones. All probes run on one machine: the one named, the
//! comparison's, or the machine that claimed the first probe.
//!
//! The driver ([`driver`], the `bisection-driver` worker) advances every running bisection whose
//! probes are all settled; a bisection's row is locked while it advances,
//! so servers sharing the database make each probe once.
//! What a probe says is judged in `assess`, the answer worded as 0-day
//! words it in `wording`, and the API's and the page's view built in
//! `view`.

mod assess;
pub mod driver;
mod view;
mod wording;

pub use self::driver::{advance, advance_all, spawn_driver};
pub use self::view::{BisectionSummary, find, list, view};

use patchperf_common::api::setup::grown_runs;
use patchperf_common::api::{AskedParams, Setup};
use patchperf_common::api::{BisectCommit, BisectionStatus, BisectionSubmission};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::mbox;
use patchperf_common::metric;
use patchperf_common::protocol::{BaseSource, WorkloadParams};
use patchperf_common::run::MeasurementMode;

use crate::db::bisections::{BisectionRow, NewBisection};
use crate::domain::Context;
use crate::domain::{comparison::range, jobs::lifecycle, machines};
use crate::{Error, db};

/// Stores the bisection `req` asks for, submitted by token `submitted_by`,
/// and queues its first probe (or, starting from a comparison whose report
/// shows no change, answers "not reproducible" at once); its id.
pub async fn create(
    ctx: &Context,
    submitted_by: i64,
    req: &BisectionSubmission,
) -> Result<i64, Error> {
    let from = match req.comparison {
        Some(id) => Some(
            db::comparisons::find(&ctx.db, id)
                .await?
                .ok_or_else(|| Error::NotFound(format!("no comparison {id}")))?,
        ),
        None => None,
    };
    let mut commits = Vec::new();
    let (base, mbox, git_range) = match (&from, &req.base, &req.bad) {
        (Some(c), _, _) => {
            if c.kind == ComparisonKind::Aa {
                return Err(Error::Invalid(format!(
                    "comparison {} is an A/A comparison: it has no patch to bisect",
                    c.id
                )));
            }
            if c.status != ComparisonStatus::Done {
                return Err(Error::WrongState(format!(
                    "comparison {} is {}; a bisection starts from a comparison that is done",
                    c.id, c.status
                )));
            }
            if !c.asked.workloads.contains(&req.workload) {
                return Err(Error::Invalid(format!(
                    "comparison {} did not run `{}` (it ran {})",
                    c.id,
                    req.workload,
                    c.asked.workloads.join(", ")
                )));
            }
            if c.git_range.is_some() {
                let steps = db::comparisons::steps(&ctx.db, c.id).await?;
                commits = steps.into_iter().filter_map(|s| s.commit_sha).collect();
                if commits.is_empty() {
                    commits.extend(c.commit_sha.clone());
                }
            }
            let (text, _) = db::patches::mbox(&ctx.db, c.series_id).await?;
            (c.base.0.clone(), text, c.git_range.clone())
        }
        (None, Some(BaseSource::Git { url, commit }), Some(bad)) => {
            let spelled = format!("{commit}..{bad}");
            let r = range::read(ctx, url, &spelled, ctx.config.body_limit).await?;
            commits = r.commits.iter().map(|c| c.sha.clone()).collect();
            let base = BaseSource::Git {
                url: url.clone(),
                commit: r.from.clone(),
            };
            (base, r.mbox.clone(), Some(r.spelled()))
        }
        _ => {
            return Err(Error::Invalid(
                "give either comparison, or base (a git base at the good commit) and bad".into(),
            ));
        }
    };
    let n = mbox::prefix::count(&mbox);
    if n == 0 {
        return Err(Error::Invalid("the series has no patch to bisect".into()));
    }
    let machine = match &req.machine {
        Some(name) => Some(machines::named(&ctx.db, name, req.backend).await?),
        None => match from.as_ref().and_then(|c| c.machine_id) {
            Some(id) => db::machines::find(&ctx.db, id).await?,
            None => None,
        },
    };
    let backend = req.backend.or(from.as_ref().and_then(|c| c.asked.backend));
    // One length for every probe: a length left to the mode is fixed now,
    // from the mode named or the machine's best.
    let mode = machines::measures_in(machine.as_ref(), backend.map(MeasurementMode::as_str));
    let params = match (&req.params, &from) {
        (Some(p), _) => p.resolve(mode),
        (None, Some(c)) if c.params.0.nr_task.len() == 1 => c.params.0.clone(),
        (None, Some(c)) => {
            return Err(Error::Invalid(format!(
                "comparison {} ran nr_task {}; say which one moved in params",
                c.id,
                c.params
                    .0
                    .nr_task
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        (None, None) => AskedParams {
            seconds: None,
            warmup_seconds: None,
            ..WorkloadParams::default().into()
        }
        .resolve(mode),
    };
    let runs = req
        .runs
        .or(from
            .as_ref()
            .map(|c| c.runs_per_side.clamp(0, 100).unsigned_abs()))
        .unwrap_or(3);
    let max_runs = req.max_runs.unwrap_or_else(|| grown_runs(runs)).max(runs);
    let metric = req
        .metric
        .clone()
        .unwrap_or_else(|| metric::wis_per_task_ops(params.mode));
    // What the request leaves out is the comparison's.
    let setup = Setup {
        max_runs: Some(max_runs),
        backend,
        config_fragment: req
            .config_fragment
            .clone()
            .or(from.as_ref().and_then(|c| c.asked.config_fragment.clone())),
        machine: machine.as_ref().map(|m| m.name.clone()),
        ..Setup::new(vec![req.workload.clone()], params.into(), runs)
    };
    let machine_id = machine.map(|m| m.id);
    let seed = req.order_seed.unwrap_or_else(rand::random);

    let series = mbox::parse(&mbox).map_err(|e| Error::Invalid(e.to_string()))?;
    let mut tx = ctx.db.begin().await?;
    let series_id = db::patches::insert_series(&mut tx, &mbox, &series).await?;
    let id = db::bisections::insert(
        &mut tx,
        &NewBisection {
            base: &base,
            series_id,
            commits: &commits,
            git_range: git_range.as_deref(),
            metric: &metric,
            setup: &setup,
            machine_id,
            from_comparison_id: from.as_ref().map(|c| c.id),
            // Stored as the same 64 bits; Postgres has no unsigned type.
            order_seed: seed as i64,
            submitted_by,
        },
    )
    .await?;
    tx.commit().await?;
    advance(ctx, id).await?;
    Ok(id)
}

/// The series' length: the number of commits (patches).
pub async fn series_len(ctx: &Context, b: &BisectionRow) -> Result<usize, Error> {
    let (text, _) = db::patches::mbox(&ctx.db, b.series_id).await?;
    Ok(mbox::prefix::count(&text))
}

/// The series, commit by commit.
pub(super) async fn commits(ctx: &Context, b: &BisectionRow) -> Result<Vec<BisectCommit>, Error> {
    let messages = db::patches::messages(&ctx.db, b.series_id).await?;
    Ok(messages
        .into_iter()
        .filter(|m| m.has_diff)
        .enumerate()
        .map(|(i, m)| BisectCommit {
            position: u32::try_from(i + 1).unwrap_or(u32::MAX),
            commit: b.commits.get(i).cloned(),
            // `[PATCH 3/7]` is how the series was mailed, not what it is.
            subject: mbox::Subject::parse(&m.subject).title,
            author: m.author,
        })
        .collect())
}

/// Cancels a running bisection and its unfinished probes.
pub async fn cancel(ctx: &Context, id: i64, by: &str) -> Result<(), Error> {
    let mut tx = ctx.db.begin().await?;
    match db::bisections::lock(&mut tx, id).await? {
        None => return Err(Error::NotFound(format!("no bisection {id}"))),
        Some(BisectionStatus::Running) => {}
        Some(other) => {
            return Err(Error::WrongState(format!(
                "bisection {id} is already {}",
                other.as_str()
            )));
        }
    }
    for p in db::comparisons::probes(&mut *tx, id).await? {
        if !p.status.is_final() {
            lifecycle::cancel(&mut tx, p.id, by).await?;
        }
    }
    db::bisections::finish(&mut tx, id, BisectionStatus::Cancelled, None).await?;
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    Ok(())
}
