//! A comparison submitted: what `POST /api/v1/comparisons` and a tracked
//! tree's new head both do with a checked submission. A git range is read
//! from its repository into its series; the comparison, its jobs in
//! interleaved boot order and, per patch or per commit, its steps are
//! stored in one transaction.

use patchperf_common::api::ComparisonSubmission;
use patchperf_common::api::submission::default_max_runs;
use patchperf_common::comparison::ComparisonKind;
use patchperf_common::mbox::{self, Series};
use patchperf_common::protocol::BaseSource;
use patchperf_common::run::MeasurementMode;

use crate::db::comparisons::NewComparison;
use crate::domain::Context;
use crate::domain::{interleave, lifecycle, range, steps};
use crate::{Error, db};

/// A stored submission.
#[derive(Debug)]
pub struct Submitted {
    /// The comparison's id.
    pub id: i64,
    /// For a git range: its commits as read.
    pub range: Option<range::Range>,
    /// The commit its kernels are built over, when [`Carried`] was taken.
    pub built_over: Option<String>,
}

/// Commits a git range's kernels carry over an earlier commit (a tracked
/// tree's anchor): the runner builds the range's A as `over` with `mbox`
/// on it, so a tree's every new head is one incremental build on the
/// anchor's build tree rather than a checkout and a full build of A.
#[derive(Debug, Clone)]
pub struct Carried {
    /// The commit built over; the range's A is on its first-parent line.
    pub over: String,
    /// `over..A`, one message per commit (as [`range::read`] writes them).
    pub mbox: String,
}

/// Stores the comparison `req` asks for, submitted by token
/// `submitted_by` (for tracked tree `tree_id`, when a tree's new head
/// asked, its kernels built over `carried` when that is given and the
/// whole stays within the body limit), with its jobs queued.
pub async fn comparison(
    ctx: &Context,
    req: &ComparisonSubmission,
    submitted_by: i64,
    tree_id: Option<i64>,
    carried: Option<&Carried>,
) -> Result<Submitted, Error> {
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
            r.mbox.as_str(),
        ),
        _ => (req.base.clone(), req.mbox.as_str()),
    };
    // The runner gets the carried commits on both sides and the series
    // after them on one: beyond the body limit, the range is built over
    // its own A.
    let carried = carried.filter(|c| {
        range.is_some()
            && c.mbox.len().saturating_mul(2).saturating_add(mbox.len()) <= ctx.config.body_limit
    });
    let per_patch = req.per_patch || range.is_some();
    let series = if req.aa {
        Series::empty()
    } else {
        mbox::parse(mbox).map_err(|e| Error::Invalid(e.to_string()))?
    };
    if per_patch {
        if let Some(why) = mbox::prefix::too_large(mbox) {
            return Err(Error::Invalid(why));
        }
    }
    let machine =
        match &req.machine {
            None => None,
            Some(name) => {
                let machine = db::machines::find_by_name(&ctx.db, name).await?.ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown machine `{name}`; GET /api/v1/machines lists the registered ones"
                ))
            })?;
                if let Some(backend) = req.backend {
                    if !machine.backends.iter().any(|b| b == backend.as_str()) {
                        return Err(Error::Invalid(format!(
                            "machine `{name}` cannot measure with {} (it offers {})",
                            backend.as_str(),
                            machine.backends.join(", ")
                        )));
                    }
                }
                Some(machine)
            }
        };
    let seed = req.order_seed.unwrap_or_else(rand::random);
    let plan = interleave::plan(req.runs, seed);

    let mut tx = ctx.db.begin().await?;
    let series_id = db::patches::insert_series(&mut tx, mbox, &series).await?;
    let carried_id = match carried {
        Some(c) => {
            let parsed = mbox::parse(&c.mbox)
                .map_err(|e| Error::Internal(format!("the carried commits: {e}")))?;
            Some(db::patches::insert_series(&mut tx, &c.mbox, &parsed).await?)
        }
        None => None,
    };
    let new = NewComparison {
        base: &base,
        series_id,
        kind: if req.aa {
            ComparisonKind::Aa
        } else {
            ComparisonKind::Ab
        },
        workloads: &req.workloads,
        params: &req.params,
        runs_per_side: i32::try_from(req.runs).unwrap_or(i32::MAX),
        max_runs_per_side: req
            .max_runs
            .or_else(|| default_max_runs(req.runs, req.backend, req.aa))
            .map(|m| i32::try_from(m).unwrap_or(i32::MAX)),
        backend: req.backend.map(MeasurementMode::as_str),
        config_fragment: req.config_fragment.as_deref(),
        machine: machine.map(|m| (m.id, m.inventory_json())),
        // Stored as the same 64 bits; Postgres has no unsigned type.
        order_seed: seed as i64,
        submitted_by,
        step_of: None,
        base_series_id: None,
        git_range: range.as_ref().map(range::Range::spelled),
        commit_sha: range.as_ref().map(|r| r.to.clone()),
        probe_of: None,
        tree_id,
        built_over: carried.zip(carried_id).map(|(c, id)| (c.over.as_str(), id)),
    };
    let id = db::comparisons::insert(&mut tx, &new).await?;
    lifecycle::create_jobs(&mut tx, id, &plan, 0, ctx.config.max_attempts).await?;
    if per_patch {
        let commits: Vec<String> = range
            .iter()
            .flat_map(|r| r.commits.iter().map(|c| c.sha.clone()))
            .collect();
        steps::create(&mut tx, id, &new, mbox, &commits, ctx.config.max_attempts).await?;
    }
    tx.commit().await?;
    ctx.jobs_changed.notify_waiters();
    Ok(Submitted {
        id,
        range,
        built_over: carried.map(|c| c.over.clone()),
    })
}
