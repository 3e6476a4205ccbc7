//! A comparison submitted: what `POST /api/v1/comparisons` and a tracked
//! tree's new head both ask with a checked [`ComparisonSubmission`]. A git
//! range is read from its repository into its series and the machine is
//! looked up here, before any transaction; [`comparison::queue`] stores it.

use patchperf_common::api::ComparisonSubmission;
use patchperf_common::api::Setup;
use patchperf_common::api::setup::default_max_runs;
use patchperf_common::comparison::ComparisonKind;
use patchperf_common::protocol::BaseSource;
use patchperf_common::run::MeasurementMode;
use patchperf_common::workload::map::{self, Unmapped};

use crate::Error;
use crate::domain::comparison::{self, Carried, Order, Origin};
use crate::domain::{Context, comparison::range, jobs::run_length, machines};

/// A submission read and checked, ready to queue.
#[derive(Debug)]
pub struct Prepared {
    /// What [`comparison::queue`] stores.
    pub order: Order,
    /// For a git range: its commits as read.
    pub range: Option<range::Range>,
}

/// Reads what `req` (submitted by token `submitted_by`, for `origin`) needs
/// from outside the database — a git range's commits, the machine named —
/// into an [`Order`]. `carried` (a tracked tree's anchor and the commits
/// since) is kept when the whole stays within the body limit.
pub async fn prepare(
    ctx: &Context,
    req: &ComparisonSubmission,
    submitted_by: i64,
    origin: Origin,
    carried: Option<Carried>,
) -> Result<Prepared, Error> {
    // A range's series is its commits, read from the repository.
    let range = match (&req.range, &req.base) {
        (Some(spelled), BaseSource::Git { url, .. }) => {
            Some(range::read(ctx, url, spelled, ctx.config.body_limit).await?)
        }
        _ => None,
    };
    let (base, mbox) = match (&range, &req.base) {
        (Some(r), BaseSource::Git { url, .. }) => (
            BaseSource::Git {
                url: url.clone(),
                commit: r.from.clone(),
            },
            r.mbox.clone(),
        ),
        _ => (req.base.clone(), req.mbox.clone()),
    };
    // The runner gets the carried commits on both sides and the series
    // after them on one: beyond the body limit, the range is built over
    // its own A.
    let carried = carried.filter(|c| match c {
        Carried::New { mbox: text, .. } => {
            range.is_some()
                && text.len().saturating_mul(2).saturating_add(mbox.len()) <= ctx.config.body_limit
        }
        Carried::Stored { .. } => true,
    });
    let asked = &req.setup;
    let workloads = if asked.workloads.is_empty() {
        mapped_workloads(&mbox)?
    } else {
        asked.workloads.clone()
    };
    let machine = match &asked.machine {
        None => None,
        Some(name) => Some(machines::named(&ctx.db, name, asked.backend).await?),
    };
    let mode = machines::measures_in(machine.as_ref(), asked.backend.map(MeasurementMode::as_str));
    let (params, run_length_pending) = run_length::at_submission(&asked.params, mode);
    if let Some(pool) = &asked.pool {
        machines::check_pool(&ctx.db, pool, asked.backend).await?;
    }
    let order = Order {
        origin,
        kind: if req.aa {
            ComparisonKind::Aa
        } else {
            ComparisonKind::Ab
        },
        base,
        mbox,
        per_patch: req.per_patch || range.is_some(),
        commits: range
            .iter()
            .flat_map(|r| r.commits.iter().map(|c| c.sha.clone()))
            .collect(),
        git_range: range.as_ref().map(range::Range::spelled),
        commit: range.as_ref().map(|r| r.to.clone()),
        setup: Setup {
            workloads,
            max_runs: asked
                .max_runs
                .or_else(|| default_max_runs(asked.runs, asked.backend, req.aa)),
            ..asked.clone()
        },
        params,
        run_length_pending,
        machine: machine.map(|m| (m.id, m.inventory_json())),
        seed: req.order_seed.unwrap_or_else(rand::random),
        submitted_by,
        carried,
    };
    Ok(Prepared { order, range })
}

/// Queues CI's comparison `req`, submitted by token `submitted_by`; its
/// id and the workloads it measures (the map's, where `req` named none).
pub async fn comparison(
    ctx: &Context,
    req: &ComparisonSubmission,
    submitted_by: i64,
) -> Result<(i64, Vec<String>), Error> {
    let prepared = prepare(ctx, req, submitted_by, Origin::Submitted, None).await?;
    let mut tx = ctx.db.begin().await?;
    let id = comparison::queue(&mut tx, &prepared.order, ctx.config.max_attempts).await?;
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    Ok((id, prepared.order.setup.workloads))
}

/// The workloads the workload map gives the files `mbox` touches; refused,
/// naming the files, when no workload exercises any of them.
fn mapped_workloads(mbox: &str) -> Result<Vec<String>, Error> {
    map::for_series(mbox).map_err(|why| match why {
        Unmapped::NotMeasured(words) => Error::NotMeasured(words),
        Unmapped::NoFile => Error::Invalid(why.to_string()),
    })
}
