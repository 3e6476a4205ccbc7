//! What the comparison page shows of a per-patch comparison: on the whole
//! series, a table of its steps (rows = patches, columns = each report's
//! workload and tasks, cells = the headline %change in the verdict's
//! colour, each row linking to the step's page); on a step, which patch it
//! measures against which, linking back to the whole series.

use patchperf_common::api::{StepOf, StepView};
use patchperf_common::report::format::change_column;

use super::view;

/// One cell of the steps table.
#[derive(Debug)]
pub struct StepCell {
    pub text: String,
    pub class: &'static str,
    pub title: String,
}

/// One row of the steps table: a patch.
#[derive(Debug)]
pub struct StepLine {
    pub label: String,
    /// A git range's step: its commit, short.
    pub commit: String,
    pub subject: String,
    pub href: String,
    pub status: &'static str,
    pub overall: &'static str,
    pub overall_class: String,
    pub cells: Vec<StepCell>,
    pub failure: Option<String>,
}

/// The steps table of a per-patch comparison.
#[derive(Debug, Default)]
pub struct StepsTable {
    pub columns: Vec<String>,
    pub rows: Vec<StepLine>,
}

/// The steps table; empty for a comparison without steps.
pub fn table(steps: &[StepView]) -> StepsTable {
    let keys = crate::domain::report::steps_text::columns(steps);
    let of = steps.len();
    let rows = steps
        .iter()
        .map(|s| StepLine {
            label: format!("patch {}/{of}", s.step),
            commit: s
                .commit
                .as_deref()
                .map(view::short_commit)
                .unwrap_or_default()
                .to_string(),
            subject: s.subject.clone(),
            href: format!("/comparisons/{}", s.comparison_id),
            status: s.status.as_str(),
            overall: s.overall.as_str(),
            overall_class: view::overall_class(s.overall),
            cells: keys
                .iter()
                .map(|&(workload, mode, nr_task)| {
                    let h = s
                        .headlines
                        .iter()
                        .find(|h| h.workload == workload && h.mode == mode && h.nr_task == nr_task);
                    match h {
                        Some(h) => StepCell {
                            text: format!(
                                "{} {}",
                                h.change
                                    .map(|c| change_column(c, false).trim().to_string())
                                    .unwrap_or_else(|| "-".into()),
                                view::verdict_letter(h.verdict)
                            ),
                            class: view::verdict_class(h.verdict),
                            title: format!("{}: {}", h.metric, h.verdict.as_str()),
                        },
                        None => StepCell {
                            text: String::new(),
                            class: "undecided",
                            title: String::new(),
                        },
                    }
                })
                .collect(),
            failure: s.failure.clone(),
        })
        .collect();
    StepsTable {
        columns: keys
            .iter()
            .map(|(w, mode, n)| format!("{w} {} ×{n}", mode.as_str()))
            .collect(),
        rows,
    }
}

/// What a step's page says of it: a mailed patch as `patch 2/3 “fs: …”
/// against patch 1/3`, a commit as `deffb20224 “fs: …” against its parent
/// (commit 2/3)`; the subject without its `[PATCH 2/3]`.
pub fn step_line(s: &StepOf) -> String {
    let title = patchperf_common::mbox::Subject::parse(&s.subject).title;
    match &s.commit {
        Some(sha) => format!(
            "{} “{title}” against its parent (commit {}/{})",
            &sha[..sha.len().min(10)],
            s.step,
            s.of
        ),
        None => {
            let against = match s.step {
                1 => "the base".to_string(),
                k => format!("patch {}/{}", k - 1, s.of),
            };
            format!("patch {}/{} “{title}” against {against}", s.step, s.of)
        }
    }
}
