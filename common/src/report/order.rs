//! The order of the table's rows, as 0-day's reports have them.
//!
//! From lkp-tests' `Compare.sort_stats` (`lib/compare.rb`): each row's
//! family is its name up to the first dot; rows sort by
//! (number of rows of that family in the table, sort key, change), where the
//! sort key is the first two components for `perf-profile` (so
//! `perf-profile.calltrace`, `.children`, `.self` each form a block, sorted
//! by change) and the whole name otherwise (so the change never matters).
//! Small families come first and perf-profile, the largest, comes last.
//!
//! lkp-tests' code also resets the count of the benchmark's own family
//! (will-it-scale) to 0, which would put it first; the reports 0-day mails do
//! not show that (seed 004 lists `numa-meminfo` and `perf-c2c`, one row each,
//! before the three will-it-scale rows), and we follow the mails.
//!
//! Rows without a change sort after those with one in their block; equal
//! keys fall back to the name so the order is always the same.

use std::cmp::Ordering;
use std::collections::HashMap;

/// A row as the order sees it: its name and its change.
pub trait Row {
    /// Metric name.
    fn name(&self) -> &str;
    /// `%change` (percent or points), if any.
    fn change(&self) -> Option<f64>;
}

impl Row for super::MetricComparison {
    fn name(&self) -> &str {
        &self.name
    }
    fn change(&self) -> Option<f64> {
        self.change
    }
}

impl<R: Row> Row for &R {
    fn name(&self) -> &str {
        (*self).name()
    }
    fn change(&self) -> Option<f64> {
        (*self).change()
    }
}

/// Family of a metric: `perf-stat` for `perf-stat.i.cpi`.
pub fn family(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// The sort key 0-day uses inside the family order.
fn sort_key(name: &str) -> &str {
    if family(name) == "perf-profile" {
        // first two dot-separated components
        match name.match_indices('.').nth(1) {
            Some((i, _)) => &name[..i],
            None => name,
        }
    } else {
        name
    }
}

/// Sorts `rows` into 0-day's order (see the module documentation).
pub fn sort_rows<R: Row>(rows: &mut [R]) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in rows.iter() {
        *counts.entry(family(r.name())).or_default() += 1;
    }
    // Each row's key once, not once per comparison: a stable sort of the
    // row indices by it, then the rows moved into that order.
    let keys: Vec<(usize, &str, Option<f64>, &str)> = rows
        .iter()
        .map(|r| {
            let name = r.name();
            (counts[family(name)], sort_key(name), r.change(), name)
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let ((fa, ka, ca, na), (fb, kb, cb, nb)) = (keys[a], keys[b]);
        fa.cmp(&fb)
            .then_with(|| ka.cmp(kb))
            .then_with(|| match (ca, cb) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            })
            .then_with(|| na.cmp(nb))
    });
    // destination[i]: where the row now at i belongs; each swap puts one
    // row in its place.
    let mut destination = vec![0; order.len()];
    for (to, &from) in order.iter().enumerate() {
        destination[from] = to;
    }
    for i in 0..rows.len() {
        while destination[i] != i {
            let to = destination[i];
            rows.swap(i, to);
            destination.swap(i, to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct R(&'static str, Option<f64>);
    impl Row for R {
        fn name(&self) -> &str {
            self.0
        }
        fn change(&self) -> Option<f64> {
            self.1
        }
    }

    #[test]
    fn small_families_first_names_inside_profiles_by_change() {
        let mut rows = vec![
            R("perf-profile.self.cycles-pp.dup", Some(0.2)),
            R("perf-stat.i.cpi", Some(3.9)),
            R("will-it-scale.workload", Some(1.2)),
            R("perf-profile.children.cycles-pp.alloc_fd", Some(-0.6)),
            R("perf-profile.self.cycles-pp.alloc_fd", Some(-0.2)),
            R("numa-meminfo.node0.AnonPages", Some(74.1)),
            R("will-it-scale.per_process_ops", Some(1.2)),
            R("perf-stat.i.branch-instructions", Some(-4.3)),
            R("perf-profile.children.cycles-pp.do_syscall_64", Some(-0.7)),
            R(
                "perf-profile.self.cycles-pp.syscall_return_via_sysret",
                Some(-0.5),
            ),
        ];
        sort_rows(&mut rows);
        let names: Vec<_> = rows.iter().map(|r| r.0).collect();
        assert_eq!(
            names,
            [
                // 1 row
                "numa-meminfo.node0.AnonPages",
                // 2 rows each: perf-stat < will-it-scale by name; inside, by name
                "perf-stat.i.branch-instructions",
                "perf-stat.i.cpi",
                "will-it-scale.per_process_ops",
                "will-it-scale.workload",
                // 5 rows: children block, then self block, each by change
                "perf-profile.children.cycles-pp.do_syscall_64",
                "perf-profile.children.cycles-pp.alloc_fd",
                "perf-profile.self.cycles-pp.syscall_return_via_sysret",
                "perf-profile.self.cycles-pp.alloc_fd",
                "perf-profile.self.cycles-pp.dup",
            ]
        );
    }

    #[test]
    fn rows_without_a_change_go_last_in_their_block() {
        let mut rows = vec![
            R("perf-profile.self.cycles-pp.b", None),
            R("perf-profile.self.cycles-pp.a", Some(5.0)),
            R("perf-profile.self.cycles-pp.c", Some(-5.0)),
        ];
        sort_rows(&mut rows);
        let names: Vec<_> = rows.iter().map(|r| r.0).collect();
        assert_eq!(
            names,
            [
                "perf-profile.self.cycles-pp.c",
                "perf-profile.self.cycles-pp.a",
                "perf-profile.self.cycles-pp.b"
            ]
        );
    }

    #[test]
    fn family_and_key() {
        assert_eq!(family("perf-stat.i.cpi"), "perf-stat");
        assert_eq!(family("kernel.build_seconds"), "kernel");
        assert_eq!(
            sort_key("perf-profile.self.cycles-pp.dup"),
            "perf-profile.self"
        );
        assert_eq!(sort_key("perf-stat.i.cpi"), "perf-stat.i.cpi");
    }
}
