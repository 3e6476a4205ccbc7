//! A bisection's answer in 0-day's words: `first bad commit: [0123456789]
//! subject`, the candidates a skipped commit leaves, or "not
//! reproducible".

use patchperf_common::api::BisectCommit;
use patchperf_common::bisect::Reading;
use patchperf_common::stats::interval::ends_text;

use crate::Error;
use crate::db::bisections::BisectionRow;
use crate::domain::Context;

use super::assess::Assessment;
use super::commits;

/// Commit k as 0-day names one: `[0123456789] subject`, or `patch k/n
/// subject` for a mailed series.
pub(super) async fn commit_label(
    ctx: &Context,
    b: &BisectionRow,
    k: usize,
) -> Result<String, Error> {
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

pub(super) fn what(b: &BisectionRow) -> String {
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

pub(super) fn signed(change: Option<f64>) -> String {
    change.map_or_else(|| "n/a".into(), |c| format!("{c:+.2}%"))
}

pub(super) async fn found(
    ctx: &Context,
    b: &BisectionRow,
    k: usize,
    a: &Assessment,
) -> Result<String, Error> {
    let label = commit_label(ctx, b, k).await?;
    let probe = a
        .probes
        .iter()
        .find(|p| usize::try_from(p.row.probe).is_ok_and(|p| p == k));
    let measured = match probe.and_then(|p| p.reading.map(|r| (r, p.interval))) {
        Some((r, interval)) => format!(
            "{} {}{}",
            signed(r.change),
            interval.map_or(String::new(), |(lo, hi)| {
                let (lo, hi) = ends_text(lo, hi, 2);
                format!("[{lo}%, {hi}%] ")
            }),
            r.verdict.as_str()
        ),
        None => format!("{} at the bad end", signed(a.end.and_then(|e| e.change))),
    };
    Ok(format!(
        "first bad commit: {label}\n{}: {measured} against the good end",
        what(b)
    ))
}

pub(super) async fn one_of(ctx: &Context, b: &BisectionRow, ks: &[usize]) -> Result<String, Error> {
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

pub(super) fn not_reproducible(b: &BisectionRow, end: Reading) -> String {
    format!(
        "not reproducible: {} does not differ between the good and the bad end \
         ({}, {})",
        what(b),
        signed(end.change),
        end.verdict.as_str()
    )
}
