//! One sentence of why: what a report itself measured that accounts for
//! its headline change. It is derived by a rule, never written per patch,
//! and names only rows the report shows.
//!
//! The rule, for a report whose headline metric (ops per task) is a real
//! change (an improvement or regression, or real but below δ); other
//! verdicts get no explanation:
//!
//! 1. **Instructions per operation.** When perf stat counted instructions
//!    (`perf-stat.overall.path-length` on both sides) and the report calls
//!    its change real: `4.6% fewer instructions per operation (path-length
//!    A → B)`; when it calls it no change: the instructions per operation
//!    stayed, so the time each took moved. Without counters, under
//!    `tcg-icount` guest time counts instructions, so the change of time
//!    per operation is the change of instructions: `1/(1 + change) − 1`.
//!    Otherwise nothing is said of instructions.
//! 2. **Where, in the profile.** Each `perf-profile.children.cycles-pp.*`
//!    entry (the share of samples in a function and its callees) is turned
//!    into a share of the base kernel's time per operation: the base's
//!    share as it is, the patched share × base ops ÷ patched ops (samples
//!    are time, and the patched kernel spends less or more time per
//!    operation). An entry is named when the report shows its row (our
//!    verdict or 0-day's range rule calls it changed: with 3 noisy profiles
//!    a side, false-discovery control over hundreds of rows rarely lets one
//!    through, while 0-day's rule asks every run of one side to lie beyond
//!    the other's middle), it moved by at least the points δ (0.1 points)
//!    of the time per operation, and it is not the path itself (in half
//!    the samples or more on both sides: the syscall entry, the loop). The
//!    three that moved most are named, each as gone (0 in every patched
//!    run), new (0 in every base run) or from → to. An entry whose share
//!    rose only because the rest of the path shrank keeps its share of the
//!    base's time and is not named.
//! 3. **Which system call.** A named entry is placed in one of the
//!    workload's system calls when one of the report's
//!    `perf-profile.calltrace` chains from it passes that call's entry point
//!    (`__x64_sys_close` → `close(2)`).
//!
//! When neither 1 nor 2 finds anything, the explanation is "no explanation
//! found" with the reason.

use super::format::change_text;
use super::model::{Comparison, MetricComparison};
use crate::run::MeasurementMode;
use crate::stats::ChangeUnit;
use crate::workload::{self, Syscall};

/// The profile rows the rule reads: inclusive shares of samples.
const CHILDREN: &str = "perf-profile.children.cycles-pp.";
/// The call chains that place an entry in a system call.
const CALLTRACE: &str = "perf-profile.calltrace.cycles-pp.";
/// perf stat's instructions per operation.
const PATH_LENGTH: &str = "perf-stat.overall.path-length";
/// An entry in at least this share of samples on both sides is the path
/// itself, not a place in it.
const WHOLE_PATH: f64 = 50.0;
/// At most this many entries are named.
const MAX_NAMED: usize = 3;

/// The explanation of report `c`'s headline change (see the module
/// documentation), or `None` when its headline verdict is no real change.
pub fn explain(c: &Comparison) -> Option<String> {
    let m = c.headline_metric()?;
    if !(m.verdict.is_change() || m.real_below_delta) {
        return None;
    }
    let change = m.change.filter(|v| v.is_finite())?;
    let syscalls = workload::find(&c.header.workload).map_or(&[][..], |w| w.syscalls);
    let cost = instructions(c, change, syscalls);
    let ratio = match (m.base.mean, m.patched.mean) {
        (Some(b), Some(p)) if b > 0.0 && p > 0.0 && (b / p).is_finite() => Some(b / p),
        _ => None,
    };
    let has_profile = c.metrics.iter().any(|r| r.name.starts_with(CHILDREN));
    let named = ratio.map_or_else(Vec::new, |r| entries(c, r, syscalls));
    let head = format!("{} {}", c.header.workload, change_text(m));
    Some(match (cost, named.is_empty()) {
        (None, true) if has_profile => format!(
            "{head}: no explanation found: no instruction count, and no profile entry the \
             report shows moved by {} points or more of the time per operation",
            points_delta(c)
        ),
        (None, true) => format!(
            "{head}: no explanation found: the report has neither instruction counts \
             (perf-stat path-length) nor a profile"
        ),
        (Some(cost), true) if has_profile => format!(
            "{head}: {cost}; no profile entry the report shows moved by {} points or more of \
             the time per operation",
            points_delta(c)
        ),
        (Some(cost), true) => format!("{head}: {cost}; no profile to say where"),
        (cost, false) => {
            let cost = cost.map_or(String::new(), |c| format!("{c}; "));
            format!(
                "{head}: {cost}in the profile, as shares of the base kernel's time per \
                 operation: {}",
                list(&named)
            )
        }
    })
}

/// The points δ as reports print it.
fn points_delta(c: &Comparison) -> String {
    crate::stats::verdict::delta_text(c.policy.threshold(ChangeUnit::Points))
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `openat(2) + close(2)`.
fn calls_text(syscalls: &[Syscall]) -> String {
    syscalls
        .iter()
        .map(|s| format!("{}(2)", s.name))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Part 1 of the rule: the change of instructions per operation, if the
/// report can tell it.
fn instructions(c: &Comparison, ops_change: f64, syscalls: &[Syscall]) -> Option<String> {
    let per_op = if syscalls.is_empty() {
        "per operation".to_string()
    } else {
        format!("per {}", calls_text(syscalls))
    };
    let fewer_or_more = |percent: f64| {
        let word = if percent < 0.0 { "fewer" } else { "more" };
        format!("{:.1}% {word} instructions {per_op}", percent.abs())
    };
    if let Some(pl) = c.metric(PATH_LENGTH) {
        if let (Some(b), Some(p), Some(change)) = (pl.base.mean, pl.patched.mean, pl.change) {
            let values = format!("path-length {} → {}", short(b), short(p));
            if pl.verdict.is_change() || pl.real_below_delta {
                return Some(format!("{} ({values})", fewer_or_more(change)));
            }
            if pl.verdict == crate::stats::Verdict::NoChange {
                return Some(format!(
                    "the same instructions {per_op} ({values}): each took more or less time"
                ));
            }
        }
    }
    if c.header.measurement == Some(MeasurementMode::TcgIcount) {
        let instructions = (1.0 / (1.0 + ops_change / 100.0) - 1.0) * 100.0;
        if instructions.is_finite() {
            return Some(format!(
                "{} (tcg-icount: guest time counts instructions)",
                fewer_or_more(instructions)
            ));
        }
    }
    None
}

/// A number as a sentence shows it: `1234`, `83.5`.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Parts 2 and 3 of the rule: the entries named, in words.
fn entries(c: &Comparison, ratio: f64, syscalls: &[Syscall]) -> Vec<String> {
    let delta = c.policy.threshold(ChangeUnit::Points);
    let mut found: Vec<(f64, &MetricComparison, f64, f64)> = c
        .metrics
        .iter()
        .filter(|r| r.name.starts_with(CHILDREN) && shown(r))
        .filter_map(|r| {
            let (b, p) = (r.base.mean?, r.patched.mean?);
            if b >= WHOLE_PATH && p >= WHOLE_PATH {
                return None;
            }
            let (before, after) = (b, p * ratio);
            let moved = after - before;
            (moved.is_finite() && moved.abs() >= delta).then_some((moved.abs(), r, before, after))
        })
        .collect();
    // The largest first; the name last, so that ties keep one order.
    found.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.name.cmp(&y.1.name)));
    found
        .into_iter()
        .take(MAX_NAMED)
        .map(|(_, r, before, after)| {
            let symbol = &r.name[CHILDREN.len()..];
            // The entry point itself needs no placing.
            let place = syscall_of(c, symbol, syscalls)
                .filter(|s| s.entry_symbol() != symbol)
                .map_or(String::new(), |s| format!(" in {}(2)", s.name));
            let how = match (r.base.mean, r.patched.mean) {
                (_, Some(0.0)) => format!("{before:.1}% → gone"),
                (Some(0.0), _) => format!("new → {after:.1}%"),
                _ => format!("{before:.1}% → {after:.1}%"),
            };
            format!("`{symbol}`{place} {how}")
        })
        .collect()
}

/// Whether the text report and the page show row `r` of a report: our
/// verdict or 0-day's rule calls it changed (see
/// [`super::text::selected_rows`]).
fn shown(r: &MetricComparison) -> bool {
    r.verdict.is_change() || r.zero_day.is_some_and(|z| z.changed)
}

/// The workload's system call whose entry point one of the report's call
/// chains from `symbol` passes, if one does.
fn syscall_of<'a>(c: &Comparison, symbol: &str, syscalls: &'a [Syscall]) -> Option<&'a Syscall> {
    let from = format!("{CALLTRACE}{symbol}.");
    syscalls.iter().find(|s| {
        let entry = s.entry_symbol();
        symbol == entry
            || c.metrics.iter().any(|r| {
                r.name
                    .strip_prefix(&from)
                    .is_some_and(|callers| callers.split('.').any(|f| f == entry))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::{compare, run};
    use crate::run::RunResult;

    const OPS: &str = "will-it-scale.per_process_ops";

    /// Three runs a side of dup1 with `base` and `patched` metrics, each
    /// run 0.01% apart so that every test has a spread.
    fn report(base: &[(&str, f64)], patched: &[(&str, f64)]) -> Comparison {
        let side = |metrics: &[(&str, f64)]| -> Vec<RunResult> {
            [0.9999, 1.0, 1.0001]
                .iter()
                .map(|f| {
                    let scaled: Vec<(&str, f64)> =
                        metrics.iter().map(|&(n, v)| (n, v * f)).collect();
                    let mut r = run(&scaled);
                    r.profile_event = Some("cpu-clock".into());
                    r
                })
                .collect()
        };
        let (b, p) = (side(base), side(patched));
        compare("lab", &b, &p)
    }

    #[test]
    fn no_real_change_no_explanation() {
        let c = report(&[(OPS, 1000.0)], &[(OPS, 1000.0)]);
        assert_eq!(c.explanation, None);
    }

    #[test]
    fn under_icount_time_per_operation_is_instructions() {
        // +25% ops: 1/1.25 − 1 = −20% instructions per operation.
        let c = report(&[(OPS, 1000.0)], &[(OPS, 1250.0)]);
        assert_eq!(
            c.explanation.as_deref(),
            Some(
                "dup1 +25.0%: 20.0% fewer instructions per dup(2) + close(2) \
                 (tcg-icount: guest time counts instructions); no profile to say where"
            )
        );
    }

    #[test]
    fn path_length_counted_by_perf_comes_first() {
        let pl = PATH_LENGTH;
        let c = report(&[(OPS, 1000.0), (pl, 800.0)], &[(OPS, 950.0), (pl, 840.0)]);
        assert!(
            c.explanation.as_deref().unwrap().starts_with(
                "dup1 -5.0%: 5.0% more instructions per dup(2) + close(2) \
                 (path-length 800 → 840); "
            ),
            "{:?}",
            c.explanation
        );
        // The same instructions, fewer ops: it is each instruction's time.
        let c = report(&[(OPS, 1000.0), (pl, 800.0)], &[(OPS, 950.0), (pl, 800.0)]);
        assert!(
            c.explanation
                .as_deref()
                .unwrap()
                .contains("the same instructions per dup(2) + close(2) (path-length 800 → 800): each took more or less time"),
            "{:?}",
            c.explanation
        );
    }

    #[test]
    fn profile_entries_gone_new_and_moved_as_shares_of_the_base_time() {
        // Ops +25%: the patched kernel takes 0.8 of the base's time per
        // operation. `task_work_run` (8%) is gone, `__fput_sync` (5% of
        // the patched samples = 4% of the base's time) is new,
        // `__x64_sys_close` goes from 20% to 30% × 0.8 = 24%, and
        // `filp_close` from 10% to 12.5% × 0.8 = 10%: its share rose only
        // because the rest shrank, so it is not named. The syscall entry
        // (95%, 95%) is the path itself.
        let base = [
            (OPS, 1000.0),
            ("perf-profile.children.cycles-pp.task_work_run", 8.0),
            ("perf-profile.children.cycles-pp.__x64_sys_close", 20.0),
            ("perf-profile.children.cycles-pp.filp_close", 10.0),
            (
                "perf-profile.children.cycles-pp.entry_SYSCALL_64_after_hwframe",
                95.0,
            ),
            (
                "perf-profile.calltrace.cycles-pp.__fput_sync.__x64_sys_close.do_syscall_64",
                0.0,
            ),
        ];
        let patched = [
            (OPS, 1250.0),
            ("perf-profile.children.cycles-pp.__fput_sync", 5.0),
            ("perf-profile.children.cycles-pp.__x64_sys_close", 30.0),
            ("perf-profile.children.cycles-pp.filp_close", 12.5),
            (
                "perf-profile.children.cycles-pp.entry_SYSCALL_64_after_hwframe",
                95.0,
            ),
            (
                "perf-profile.calltrace.cycles-pp.__fput_sync.__x64_sys_close.do_syscall_64",
                5.0,
            ),
        ];
        let c = report(&base, &patched);
        assert_eq!(
            c.explanation.as_deref(),
            Some(
                "dup1 +25.0%: 20.0% fewer instructions per dup(2) + close(2) \
                 (tcg-icount: guest time counts instructions); in the profile, as shares of \
                 the base kernel's time per operation: `task_work_run` 8.0% → gone, \
                 `__fput_sync` in close(2) new → 4.0% and `__x64_sys_close` 20.0% → 24.0%"
            )
        );
        // Every entry named is a row the text report shows.
        let text = crate::report::text::render(&c, &Default::default());
        for sym in ["task_work_run", "__fput_sync", "__x64_sys_close"] {
            assert!(
                text.contains(&format!("  {CHILDREN}{sym}\n")),
                "{sym}: {text}"
            );
        }
        assert!(text.contains("\nwhy: dup1 +25.0%: "), "{text}");
    }

    #[test]
    fn nothing_found_is_said() {
        // Wall clock, no path-length, a profile that did not move.
        let mut c = report(
            &[
                (OPS, 1000.0),
                ("perf-profile.children.cycles-pp.dup_fd", 10.0),
            ],
            &[
                (OPS, 1250.0),
                ("perf-profile.children.cycles-pp.dup_fd", 12.5),
            ],
        );
        c.header.measurement = Some(MeasurementMode::Kvm);
        assert_eq!(
            explain(&c).as_deref(),
            Some(
                "dup1 +25.0%: no explanation found: no instruction count, and no profile entry \
                 the report shows moved by 0.1 points or more of the time per operation"
            )
        );
        c.metrics.retain(|m| !m.name.starts_with("perf-profile."));
        assert_eq!(
            explain(&c).as_deref(),
            Some(
                "dup1 +25.0%: no explanation found: the report has neither instruction counts \
                 (perf-stat path-length) nor a profile"
            )
        );
    }
}
