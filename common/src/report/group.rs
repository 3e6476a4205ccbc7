//! Runs split by what one report compares: the same workload, task mode and
//! nr_task. The server (a stored comparison) and the runner (`compare` of
//! two results directories) group the same way.

use std::cmp::Ordering;

use crate::run::{RunResult, TaskMode};

/// What the runs of one report share: `dup1/process/2`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReportKey {
    /// The workload (`dup1`).
    pub workload: String,
    /// Processes or threads.
    pub mode: TaskMode,
    /// Tasks run at once.
    pub nr_task: u32,
}

impl ReportKey {
    /// The key of one run.
    pub fn of(run: &RunResult) -> ReportKey {
        ReportKey {
            workload: run.workload.clone(),
            mode: run.mode,
            nr_task: run.nr_task,
        }
    }
}

/// `dup1/process/2`, as 0-day names a test case.
impl std::fmt::Display for ReportKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}",
            self.workload,
            self.mode.as_str(),
            self.nr_task
        )
    }
}

/// By workload name, then mode as 0-day spells it, then nr_task.
impl Ord for ReportKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.workload
            .cmp(&other.workload)
            .then(self.mode.as_str().cmp(other.mode.as_str()))
            .then(self.nr_task.cmp(&other.nr_task))
    }
}

impl PartialOrd for ReportKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Splits `items` by the [`ReportKey`] of the run each holds (`run` finds
/// it), groups in the order their first item came, items in their order.
pub fn group_by_report<T>(
    items: impl IntoIterator<Item = T>,
    run: impl Fn(&T) -> &RunResult,
) -> Vec<(ReportKey, Vec<T>)> {
    let mut groups: Vec<(ReportKey, Vec<T>)> = Vec::new();
    for item in items {
        let key = ReportKey::of(run(&item));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(item),
            None => groups.push((key, vec![item])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::run;

    fn case(workload: &str, mode: TaskMode, nr_task: u32) -> RunResult {
        RunResult {
            workload: workload.into(),
            mode,
            nr_task,
            ..run(&[])
        }
    }

    #[test]
    fn runs_are_grouped_in_order_of_first_appearance() {
        let open = case("open1", TaskMode::Process, 2);
        let dup = case("dup1", TaskMode::Process, 1);
        let threads = case("dup1", TaskMode::Thread, 1);
        let groups = group_by_report([&open, &dup, &open, &threads, &dup], |r| *r);
        let keys: Vec<String> = groups.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["open1/process/2", "dup1/process/1", "dup1/thread/1"]);
        let sizes: Vec<usize> = groups.iter().map(|(_, g)| g.len()).collect();
        assert_eq!(sizes, [2, 2, 1]);
        let mut sorted: Vec<String> = Vec::new();
        let mut keys: Vec<&ReportKey> = groups.iter().map(|(k, _)| k).collect();
        keys.sort();
        sorted.extend(keys.iter().map(|k| k.to_string()));
        assert_eq!(
            sorted,
            ["dup1/process/1", "dup1/thread/1", "open1/process/2"]
        );
    }
}
