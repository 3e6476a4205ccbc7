//! What a bisection's settled probes say: each probe's reading of the
//! bisected metric (its verdict, change and interval) and, once the bad end
//! has reproduced the change, how each probe counts (good, bad, skip).

use patchperf_common::bisect::{self, Judgement, Reading};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::protocol::NrTask;
use patchperf_common::stats::Interval;

use crate::db::bisections::BisectionRow;
use crate::db::comparisons::ProbeRow;
use crate::domain::Context;
use crate::{Error, db};

/// What is known of a bisection from its settled probes.
pub(super) struct Assessment {
    /// The bad end's reading (its probe's, or the comparison's report).
    pub(super) end: Option<Reading>,
    /// Why the end has no reading.
    pub(super) end_failure: Option<String>,
    /// Every probe with what it says.
    pub(super) probes: Vec<Assessed>,
}

/// One probe and what it says.
pub(super) struct Assessed {
    pub(super) row: ProbeRow,
    pub(super) reading: Option<Reading>,
    pub(super) interval: Option<(f64, f64)>,
    pub(super) judgement: Option<Judgement>,
    pub(super) by_estimate: bool,
    pub(super) failure: Option<String>,
}

pub(super) async fn assess(ctx: &Context, b: &BisectionRow, n: usize) -> Result<Assessment, Error> {
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
pub(super) fn end_probe(p: &ProbeRow, n: usize) -> bool {
    usize::try_from(p.probe).is_ok_and(|k| k == n)
}

/// The bisected metric in comparison `id`'s report: its verdict and change,
/// and the change's 95% interval.
pub(super) async fn read_metric(
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
