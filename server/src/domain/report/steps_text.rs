//! The patch-by-patch table of a per-patch comparison's text report, as
//! its page shows the steps: one line per patch with the headline metric's
//! %change and verdict of each (workload, mode, nr_task) report, and the
//! patch's subject; a step that failed says why on the line below.

use std::fmt::Write as _;

use patchperf_common::api::StepView;
use patchperf_common::run::TaskMode;

/// The columns of a steps table, page or text: one per report (workload,
/// mode, nr_task) in the order the reports first appear (a failed step
/// has none).
pub fn columns(steps: &[StepView]) -> Vec<(&str, TaskMode, u32)> {
    let mut keys = Vec::new();
    for h in steps.iter().flat_map(|s| &s.headlines) {
        let key = (h.workload.as_str(), h.mode, h.nr_task);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// The table of `steps`; empty for a comparison without steps.
pub fn steps_table(steps: &[StepView]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let keys = columns(steps);
    let of = steps.len();
    let mut header = vec!["patch".to_string()];
    header.extend(
        keys.iter()
            .map(|(w, mode, n)| format!("{w} {} ×{n}", mode.as_str())),
    );
    header.push("subject".into());
    let mut rows = vec![header];
    for s in steps {
        let mut row = vec![format!("{}/{of}", s.step)];
        for &(workload, mode, nr_task) in &keys {
            let h = s
                .headlines
                .iter()
                .find(|h| h.workload == workload && h.mode == mode && h.nr_task == nr_task);
            row.push(match h {
                Some(h) => match h.change {
                    Some(c) => format!("{c:+.1}% {}", h.verdict.as_str()),
                    None => format!("- {}", h.verdict.as_str()),
                },
                None => s.status.as_str().to_string(),
            });
        }
        let commit = s.commit.as_deref().map(|c| &c[..c.len().min(10)]);
        row.push(match commit {
            Some(c) => format!("{c} {}", s.subject),
            None => s.subject.clone(),
        });
        rows.push(row);
    }
    // Every column but the last (the subject) padded to its widest cell.
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::from(
        "patch by patch: each patch against the patches before it (the first against the \
         base); the headline metric's %change and verdict of each report\n\n",
    );
    for (k, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == columns {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "  {}", line.trim_end());
        let failure = k.checked_sub(1).and_then(|i| steps[i].failure.as_deref());
        if let Some(f) = failure {
            let _ = writeln!(
                out,
                "  {}  {}: {f}",
                " ".repeat(widths[0]),
                steps[k - 1].status
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use patchperf_common::api::StepHeadline;
    use patchperf_common::comparison::{ComparisonStatus, OverallVerdict};
    use patchperf_common::stats::Verdict;

    use super::*;

    fn step(k: u32, change: Option<f64>, verdict: Verdict) -> StepView {
        StepView {
            step: k,
            comparison_id: i64::from(k) + 1,
            subject: format!("[PATCH {k}/3] fs: step {k}"),
            commit: None,
            status: ComparisonStatus::Done,
            overall: OverallVerdict::NoChange,
            headlines: vec![StepHeadline {
                workload: "dup1".into(),
                mode: TaskMode::Process,
                nr_task: 1,
                metric: "will-it-scale.per_process_ops".into(),
                change,
                verdict,
            }],
            failure: None,
        }
    }

    #[test]
    fn one_line_a_patch_with_each_reports_change_and_verdict() {
        let failed = StepView {
            status: ComparisonStatus::Failed,
            headlines: Vec::new(),
            failure: Some("patch 3/3 does not apply".into()),
            ..step(3, None, Verdict::Undecided)
        };
        let steps = [
            step(1, Some(0.04), Verdict::NoChange),
            step(2, Some(-3.31), Verdict::Regression),
            failed,
        ];
        let table = steps_table(&steps);
        let lines: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                "  patch  dup1 process ×1   subject",
                "  1/3    +0.0% no change   [PATCH 1/3] fs: step 1",
                "  2/3    -3.3% regression  [PATCH 2/3] fs: step 2",
                "  3/3    failed            [PATCH 3/3] fs: step 3",
                "         failed: patch 3/3 does not apply",
            ],
            "{table}"
        );
        assert_eq!(steps_table(&[]), "");
    }
}
