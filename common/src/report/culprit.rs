//! Which step moved a number: for a series, range or tree push measured
//! step by step, the step whose own report moved a cell (workload, mode,
//! nr_task) the same way the whole did, by the most. Every answer that
//! names the culprit (the page's first lines, `report.txt`, the dashboard
//! row, a list reply) asks this one rule.

use crate::api::StepView;
use crate::mbox::subject::Subject;
use crate::report::Comparison;
use crate::stats::Verdict;

/// The step whose headline in `c`'s cell has `c`'s headline verdict (a
/// regression or an improvement) and the largest change; `None` when the
/// whole did not move or no single step moved it on its own (each step
/// within the noise while their sum is not).
pub fn moved_by<'a>(c: &Comparison, steps: &'a [StepView]) -> Option<&'a StepView> {
    let verdict = c.headline_metric()?.verdict;
    if !matches!(verdict, Verdict::Regression | Verdict::Improvement) {
        return None;
    }
    let h = &c.header;
    steps
        .iter()
        .filter_map(|s| {
            let x = s.headlines.iter().find(|x| {
                x.workload == h.workload
                    && x.mode == h.mode
                    && x.nr_task == h.nr_task
                    && x.verdict == verdict
            })?;
            Some((s, x.change.unwrap_or(0.0).abs()))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(s, _)| s)
}

/// Step `s` of `of` as kernel people name it: `patch 2/3 “fs: add an audit
/// hook”` for a mailed series, `deffb20224 “fs: add an audit hook” (commit
/// 2/3)` for a range's or a tree push's commit.
pub fn step_words(s: &StepView, of: usize) -> String {
    let title = Subject::parse(&s.subject).title;
    match &s.commit {
        Some(sha) => {
            let short: String = sha.chars().take(10).collect();
            format!("{short} “{title}” (commit {}/{of})", s.step)
        }
        None => format!("patch {}/{of} “{title}”", s.step),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::StepHeadline;
    use crate::comparison::{ComparisonStatus, OverallVerdict};
    use crate::run::TaskMode;

    fn step(k: u32, commit: Option<&str>, cells: &[(&str, u32, f64, Verdict)]) -> StepView {
        StepView {
            step: k,
            comparison_id: 100 + i64::from(k),
            subject: format!("[PATCH {k}/3] fs: step {k}"),
            commit: commit.map(str::to_string),
            status: ComparisonStatus::Done,
            overall: OverallVerdict::NoChange,
            headlines: cells
                .iter()
                .map(|&(w, n, change, verdict)| StepHeadline {
                    workload: w.into(),
                    mode: TaskMode::Process,
                    nr_task: n,
                    metric: "will-it-scale.per_process_ops".into(),
                    change: Some(change),
                    verdict,
                })
                .collect(),
            failure: None,
        }
    }

    #[test]
    fn a_step_is_named_as_a_patch_or_as_a_commit() {
        let mailed = step(2, None, &[]);
        assert_eq!(step_words(&mailed, 3), "patch 2/3 “fs: step 2”");
        let commit = step(2, Some("deffb2022412345678901234567890123456789a"), &[]);
        assert_eq!(
            step_words(&commit, 3),
            "deffb20224 “fs: step 2” (commit 2/3)"
        );
    }

    #[test]
    fn the_step_that_moved_the_cell_the_same_way_by_the_most_is_named() {
        use Verdict::{NoChange, Regression};
        let steps = [
            step(
                1,
                None,
                &[("dup1", 1, -0.1, NoChange), ("open1", 1, -3.0, Regression)],
            ),
            step(
                2,
                None,
                &[("dup1", 1, -4.0, Regression), ("dup1", 2, -9.0, Regression)],
            ),
            step(3, None, &[("dup1", 1, -2.0, Regression)]),
        ];
        let whole = |workload: &str, nr_task: u32, patched: f64| {
            let mut c = crate::report::test_runs::report(nr_task, 100_000.0, patched);
            c.header.workload = workload.into();
            c
        };
        let dup1 = whole("dup1", 1, 94_000.0);
        assert_eq!(dup1.headline_metric().unwrap().verdict, Regression);
        assert_eq!(moved_by(&dup1, &steps).map(|s| s.step), Some(2));
        // Another cell of the same workload is not this one's culprit.
        assert_eq!(moved_by(&whole("dup1", 4, 94_000.0), &steps), None);
        assert_eq!(
            moved_by(&whole("fstat", 1, 94_000.0), &steps),
            None,
            "no step moved fstat"
        );
        // A whole that did not move has no culprit.
        assert_eq!(moved_by(&whole("dup1", 1, 100_000.0), &steps), None);
    }
}
