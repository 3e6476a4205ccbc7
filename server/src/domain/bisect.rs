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
//! The driver ([`spawn_driver`]) advances every running bisection whose
//! probes are all settled; a bisection's row is locked while it advances,
//! so servers sharing the database make each probe once.

use std::collections::BTreeMap;
use std::time::Duration;

use patchperf_common::api::{
    BisectCommit, BisectionOutcome, BisectionStatus, BisectionSubmission, BisectionView,
    OutcomeKind, ProbeView,
};
use patchperf_common::bisect::{self, Judgement, Next, Reading};
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::mbox;
use patchperf_common::metric;
use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
use patchperf_common::run::{MeasurementMode, TaskMode};
use patchperf_common::stats::Interval;
use sqlx::PgConnection;

use crate::db::bisections::{BisectionRow, NewBisection};
use crate::db::comparisons::ProbeRow;
use crate::domain::Context;
use crate::domain::comparison::{self, Order, Origin};
use crate::domain::workers::{Done, Worker};
use crate::domain::{lifecycle, machines, range};
use crate::{Error, db};

/// How often the driver looks at running bisections.
const POLL: Duration = Duration::from_secs(2);

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
            if !c.workloads.contains(&req.workload) {
                return Err(Error::Invalid(format!(
                    "comparison {} did not run `{}` (it ran {})",
                    c.id,
                    req.workload,
                    c.workloads.join(", ")
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
    let params = match (&req.params, &from) {
        (Some(p), _) => p.clone(),
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
        (None, None) => WorkloadParams {
            mode: TaskMode::Process,
            nr_task: vec![NrTask::Count(1)],
            seconds: 5,
            warmup_seconds: 2,
            perf_stat: false,
            perf_profile: false,
        },
    };
    let runs = req
        .runs
        .map(|r| i32::try_from(r).unwrap_or(i32::MAX))
        .or(from.as_ref().map(|c| c.runs_per_side.min(100)))
        .unwrap_or(3);
    let max_runs = req
        .max_runs
        .map(|r| i32::try_from(r).unwrap_or(i32::MAX))
        .unwrap_or((runs * 4).min(100))
        .max(runs);
    let machine_id = match &req.machine {
        Some(name) => Some(machines::named(&ctx.db, name, req.backend).await?.id),
        None => from.as_ref().and_then(|c| c.machine_id),
    };
    let metric = req
        .metric
        .clone()
        .unwrap_or_else(|| metric::wis_per_task_ops(params.mode));
    let backend = req
        .backend
        .map(|b| MeasurementMode::as_str(b).to_string())
        .or(from.as_ref().and_then(|c| c.backend.clone()));
    let config_fragment = req
        .config_fragment
        .clone()
        .or(from.as_ref().and_then(|c| c.config_fragment.clone()));
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
            workload: &req.workload,
            metric: &metric,
            params: &params,
            runs_per_side: runs,
            max_runs_per_side: max_runs,
            backend: backend.as_deref(),
            config_fragment: config_fragment.as_deref(),
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

/// What is known of a bisection from its settled probes.
struct Assessment {
    /// The bad end's reading (its probe's, or the comparison's report).
    end: Option<Reading>,
    /// Why the end has no reading.
    end_failure: Option<String>,
    /// Every probe with what it says.
    probes: Vec<Assessed>,
}

/// One probe and what it says.
struct Assessed {
    row: ProbeRow,
    reading: Option<Reading>,
    interval: Option<(f64, f64)>,
    judgement: Option<Judgement>,
    by_estimate: bool,
    failure: Option<String>,
}

/// The series' length: the number of commits (patches).
pub async fn series_len(ctx: &Context, b: &BisectionRow) -> Result<usize, Error> {
    let (text, _) = db::patches::mbox(&ctx.db, b.series_id).await?;
    Ok(mbox::prefix::count(&text))
}

async fn assess(ctx: &Context, b: &BisectionRow, n: usize) -> Result<Assessment, Error> {
    let rows = db::comparisons::probes(&ctx.db, b.id).await?;
    let mut probes = Vec::with_capacity(rows.len());
    for row in rows {
        let (reading, interval) = if row.status == ComparisonStatus::Done {
            read_metric(ctx, row.id, b).await?
        } else {
            (None, None)
        };
        let failure = if row.status == ComparisonStatus::Failed {
            db::jobs::first_failure(&ctx.db, row.id).await?
        } else {
            None
        };
        probes.push(Assessed {
            row,
            reading,
            interval,
            judgement: None,
            by_estimate: false,
            failure,
        });
    }
    let (end, end_failure) = match b.from_comparison_id {
        Some(id) => {
            let (reading, _) = read_metric(ctx, id, b).await?;
            let why = reading.is_none().then(|| {
                format!(
                    "comparison {id}'s report has no {} of {}",
                    b.metric, b.workload
                )
            });
            (reading, why)
        }
        None => match probes.iter().find(|p| end_probe(&p.row, n)) {
            Some(p) if p.row.status == ComparisonStatus::Failed => (
                None,
                Some(format!(
                    "the bad end could not be measured: {}",
                    p.failure.as_deref().unwrap_or("its comparison failed")
                )),
            ),
            Some(p) if p.row.status == ComparisonStatus::Done && p.reading.is_none() => (
                None,
                Some(format!(
                    "the bad end's report has no {} of {}",
                    b.metric, b.workload
                )),
            ),
            Some(p) => (p.reading, None),
            None => (None, None),
        },
    };
    if let Some(end_change) = end
        .filter(|e| bisect::reproduced(*e))
        .and_then(|e| e.change)
    {
        for p in probes
            .iter_mut()
            .filter(|p| !end_probe(&p.row, n) || b.from_comparison_id.is_some())
        {
            match p.row.status {
                ComparisonStatus::Failed => p.judgement = Some(Judgement::Skip),
                ComparisonStatus::Done => {
                    let (j, by_estimate) = match p.reading {
                        Some(r) => bisect::judge(end_change, r),
                        None => (Judgement::Skip, false),
                    };
                    p.judgement = Some(j);
                    p.by_estimate = by_estimate;
                }
                _ => {}
            }
        }
    }
    Ok(Assessment {
        end,
        end_failure,
        probes,
    })
}

/// Whether `p` is the probe of the bad end (commit n).
fn end_probe(p: &ProbeRow, n: usize) -> bool {
    usize::try_from(p.probe).is_ok_and(|k| k == n)
}

/// The bisected metric in comparison `id`'s report: its verdict and change,
/// and the change's 95% interval.
async fn read_metric(
    ctx: &Context,
    id: i64,
    b: &BisectionRow,
) -> Result<(Option<Reading>, Option<(f64, f64)>), Error> {
    let Some(row) = db::comparisons::find(&ctx.db, id).await? else {
        return Ok((None, None));
    };
    let report = crate::domain::report::load_shared(ctx, &row).await?;
    let params = &b.params.0;
    let wanted = params.nr_task.first();
    let group = report.groups.iter().find(|g| {
        let h = &g.comparison.header;
        h.workload == b.workload
            && h.mode == params.mode
            && match wanted {
                Some(NrTask::Count(c)) => h.nr_task == *c,
                Some(n @ NrTask::Percent(_)) => {
                    h.nr_task_requested.as_deref() == Some(n.to_string().as_str())
                }
                None => true,
            }
    });
    let Some(m) = group.and_then(|g| g.comparison.metric(&b.metric)) else {
        return Ok((None, None));
    };
    let interval = match m.interval {
        Some(Interval::Bounded { low, high }) => Some((low, high)),
        _ => None,
    };
    Ok((
        Some(Reading {
            verdict: m.verdict,
            change: m.change,
        }),
        interval,
    ))
}

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
        workloads: vec![b.workload.clone()],
        params: b.params.0.clone(),
        runs: u32::try_from(b.runs_per_side).unwrap_or(3),
        max_runs: u32::try_from(b.max_runs_per_side).ok(),
        backend: b.backend.clone(),
        config_fragment: b.config_fragment.clone(),
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

/// Commit k as 0-day names one: `[0123456789] subject`, or `patch k/n
/// subject` for a mailed series.
async fn commit_label(ctx: &Context, b: &BisectionRow, k: usize) -> Result<String, Error> {
    let commits = commits(ctx, b).await?;
    let n = commits.len();
    Ok(match commits.get(k.wrapping_sub(1)) {
        Some(BisectCommit {
            commit: Some(sha),
            subject,
            ..
        }) => format!("[{}] {subject}", &sha[..sha.len().min(10)]),
        Some(c) => format!("patch {k}/{n} {}", c.subject),
        None => format!("commit {k}"),
    })
}

fn what(b: &BisectionRow) -> String {
    let p = &b.params.0;
    let nr_task = p
        .nr_task
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    format!(
        "{} of {} ({}, nr_task {nr_task})",
        b.metric,
        b.workload,
        p.mode.as_str()
    )
}

fn signed(change: Option<f64>) -> String {
    change.map_or_else(|| "n/a".into(), |c| format!("{c:+.2}%"))
}

async fn found(ctx: &Context, b: &BisectionRow, k: usize, a: &Assessment) -> Result<String, Error> {
    let label = commit_label(ctx, b, k).await?;
    let probe = a
        .probes
        .iter()
        .find(|p| usize::try_from(p.row.probe).is_ok_and(|p| p == k));
    let measured = match probe.and_then(|p| p.reading.map(|r| (r, p.interval))) {
        Some((r, interval)) => format!(
            "{} {}{}",
            signed(r.change),
            interval.map_or(String::new(), |(lo, hi)| format!("[{lo:+.2}%, {hi:+.2}%] ")),
            r.verdict.as_str()
        ),
        None => format!("{} at the bad end", signed(a.end.and_then(|e| e.change))),
    };
    Ok(format!(
        "first bad commit: {label}\n{}: {measured} against the good end",
        what(b)
    ))
}

async fn one_of(ctx: &Context, b: &BisectionRow, ks: &[usize]) -> Result<String, Error> {
    let mut lines = vec![format!(
        "the first bad commit could not be told apart: skipped commits leave {} candidates \
         for {}:",
        ks.len(),
        what(b)
    )];
    for &k in ks {
        lines.push(commit_label(ctx, b, k).await?);
    }
    Ok(lines.join("\n"))
}

fn not_reproducible(b: &BisectionRow, end: Reading) -> String {
    format!(
        "not reproducible: {} does not differ between the good and the bad end \
         ({}, {})",
        what(b),
        signed(end.change),
        end.verdict.as_str()
    )
}

/// The series, commit by commit.
async fn commits(ctx: &Context, b: &BisectionRow) -> Result<Vec<BisectCommit>, Error> {
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
        })
        .collect())
}

/// The bisection as the API and its page show it.
pub async fn view(ctx: &Context, b: &BisectionRow) -> Result<BisectionView, Error> {
    let commits = commits(ctx, b).await?;
    let a = assess(ctx, b, commits.len()).await?;
    let machine = match b
        .machine_id
        .or_else(|| a.probes.iter().find_map(|p| p.row.machine_id))
    {
        Some(id) => db::machines::find(&ctx.db, id).await?.map(|m| m.name),
        None => None,
    };
    let probes = a
        .probes
        .into_iter()
        .map(|p| {
            let position = u32::try_from(p.row.probe).unwrap_or(0);
            let commit = commits
                .get(usize::try_from(p.row.probe).unwrap_or(0).wrapping_sub(1))
                .cloned()
                .unwrap_or(BisectCommit {
                    position,
                    commit: p.row.commit_sha.clone(),
                    subject: String::new(),
                });
            ProbeView {
                position,
                commit,
                comparison_id: p.row.id,
                report_url: ctx.config.link(&format!("/comparisons/{}", p.row.id)),
                status: p.row.status,
                runs_per_side: p.row.runs_per_side,
                verdict: p.reading.map(|r| r.verdict),
                change: p.reading.and_then(|r| r.change),
                low: p.interval.map(|i| i.0),
                high: p.interval.map(|i| i.1),
                judgement: p.judgement,
                by_estimate: p.by_estimate,
                failure: p.failure,
            }
        })
        .collect();
    let params = &b.params.0;
    Ok(BisectionView {
        id: b.id,
        status: b.status,
        page_url: ctx.config.link(&format!("/bisections/{}", b.id)),
        submitted_by: b.submitted_by_name.clone(),
        created_at: b.created_at,
        finished_at: b.finished_at,
        base: b.base.0.clone(),
        git_range: b.git_range.clone(),
        comparison_id: b.from_comparison_id,
        workload: b.workload.clone(),
        mode: params.mode,
        nr_task: params
            .nr_task
            .first()
            .map(ToString::to_string)
            .unwrap_or_default(),
        metric: b.metric.clone(),
        runs_per_side: b.runs_per_side,
        max_runs_per_side: b.max_runs_per_side,
        machine,
        commits,
        probes,
        outcome: b.outcome.as_ref().map(|o| o.0.clone()),
    })
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
    Worker::every("bisection-driver", POLL).spawn(ctx, |ctx| async move {
        Ok(Done::Handled(advance_all(&ctx).await?))
    })
}
