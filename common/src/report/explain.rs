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
//!    operation). The candidates are the entries whose rows the report
//!    shows (our verdict or 0-day's range rule calls them changed), that
//!    moved by at least the points δ (0.1 points) of the time per
//!    operation, and that are not the path itself (in half the samples or
//!    more on both sides: the syscall entry, the loop). A candidate is
//!    named only when it is significant as the metrics are: Welch's test
//!    with Benjamini–Hochberg false-discovery control at the report's level,
//!    over the candidates (over every row of the report, 3 profiles a side
//!    never make one; 0-day's rule alone lets cpu-clock's sampling jitter
//!    of a few points through). The
//!    three that moved most are named, each as gone (0 in every patched
//!    run), new (0 in every base run) or from → to. An entry whose share
//!    rose only because the rest of the path shrank keeps its share of the
//!    base's time and is not named. When entries moved by 0-day's rule but
//!    none significantly, the sentence says the profile is too coarse to
//!    say where.
//! 3. **Which system call.** A named entry is placed in the workload's
//!    system call whose `perf-profile.calltrace` chains from it carry most
//!    of it (the chains that pass the call's entry point, `__x64_sys_close`
//!    → `close(2)`, summed on the side where they are larger); when
//!    another call carries a quarter or more, both are named with their
//!    shares (`in close(2) (81%) and openat(2) (19%)`).
//!
//! When neither 1 nor 2 finds anything, the explanation is "no explanation
//! found" with the reason.

use super::format::change_text;
use super::model::{Comparison, MetricComparison};
use crate::run::MeasurementMode;
use crate::stats::ChangeUnit;
use crate::stats::fdr::benjamini_hochberg;
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
/// A second system call carrying at least this share of an entry's call
/// chains is named beside the first.
const SECOND_CALL_SHARE: f64 = 0.25;

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
    let (named, coarse) = ratio.map_or((Vec::new(), false), |r| entries(c, r, syscalls));
    let head = format!("{} {}", c.header.workload, change_text(m));
    let too_coarse = format!(
        "the profile is too coarse to say where: entries moved by 0-day's range rule, none \
         significantly with {} and {} profiles (more runs can tell)",
        m.base.values.len(),
        m.patched.values.len()
    );
    Some(match (cost, named.is_empty()) {
        (None, true) if coarse => {
            format!("{head}: no explanation found: no instruction count, and {too_coarse}")
        }
        (Some(cost), true) if coarse => format!("{head}: {cost}; {too_coarse}"),
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

/// Parts 2 and 3 of the rule: the entries named, in words, and whether
/// entries moved that only 0-day's rule calls changed (the profile too
/// coarse to say where, when none is named).
fn entries(c: &Comparison, ratio: f64, syscalls: &[Syscall]) -> (Vec<String>, bool) {
    let delta = c.policy.threshold(ChangeUnit::Points);
    let moved: Vec<(f64, &MetricComparison, f64, f64)> = c
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
    // Significant as the metrics are, with the false-discovery control
    // over the entries the sentence could name: over every row of the
    // report, 3 profiles a side never make one.
    let p: Vec<f64> = moved.iter().map(|(_, r, ..)| welch_p(r)).collect();
    let q = benjamini_hochberg(&p);
    let level = c.policy.fdr;
    let significant = |i: usize, r: &MetricComparison| r.verdict.is_change() || q[i] <= level;
    let coarse = !moved.is_empty();
    let mut found: Vec<_> = moved
        .into_iter()
        .enumerate()
        .filter(|(i, (_, r, ..))| significant(*i, r))
        .map(|(_, found)| found)
        .collect();
    // The largest first; the name last, so that ties keep one order.
    found.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.name.cmp(&y.1.name)));
    let named: Vec<String> = found
        .into_iter()
        .take(MAX_NAMED)
        .map(|(_, r, before, after)| {
            let symbol = &r.name[CHILDREN.len()..];
            let place = place(c, symbol, syscalls);
            let how = match (r.base.mean, r.patched.mean) {
                (_, Some(0.0)) => format!("{before:.1}% → gone"),
                (Some(0.0), _) => format!("new → {after:.1}%"),
                _ => format!("{before:.1}% → {after:.1}%"),
            };
            format!("`{symbol}`{place} {how}")
        })
        .collect();
    let coarse = coarse && named.is_empty();
    (named, coarse)
}

/// Welch's p of row `r`: 0 when both sides are constant and differ (an
/// entry gone from, or new in, every run of a deterministic pair), 1 when
/// it cannot be told.
fn welch_p(r: &MetricComparison) -> f64 {
    match (&r.welch, r.base.stddev, r.patched.stddev) {
        (Some(w), ..) if w.p.is_finite() => w.p,
        (_, Some(b), Some(p)) if b == 0.0 && p == 0.0 && r.base.mean != r.patched.mean => 0.0,
        _ => 1.0,
    }
}

/// Whether the text report and the page show row `r` of a report: our
/// verdict or 0-day's rule calls it changed (see
/// [`super::text::selected_rows`]).
fn shown(r: &MetricComparison) -> bool {
    r.verdict.is_change() || r.zero_day.is_some_and(|z| z.changed)
}

/// ` in close(2)`: the workload's system call whose call chains from
/// `symbol` carry most of it, or two with their shares; empty when no chain
/// places it, or when it is a call's entry point itself.
fn place(c: &Comparison, symbol: &str, syscalls: &[Syscall]) -> String {
    if syscalls.iter().any(|s| s.entry_symbol() == symbol) {
        return String::new();
    }
    let from = format!("{CALLTRACE}{symbol}.");
    // Each call's share of the chains from `symbol` that pass its entry,
    // on the side where a chain is larger.
    let mut carried: Vec<(f64, &Syscall)> = syscalls
        .iter()
        .map(|s| {
            let entry = s.entry_symbol();
            let sum: f64 = c
                .metrics
                .iter()
                .filter(|r| {
                    r.name
                        .strip_prefix(&from)
                        .is_some_and(|callers| callers.split('.').any(|f| f == entry))
                })
                .filter_map(|r| {
                    let larger = r
                        .base
                        .mean
                        .unwrap_or(0.0)
                        .max(r.patched.mean.unwrap_or(0.0));
                    larger.is_finite().then_some(larger)
                })
                .sum();
            (sum, s)
        })
        .filter(|(sum, _)| *sum > 0.0)
        .collect();
    carried.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.name.cmp(y.1.name)));
    let total: f64 = carried.iter().map(|(sum, _)| sum).sum();
    match carried.as_slice() {
        [] => String::new(),
        [(_, only)] => format!(" in {}(2)", only.name),
        [(first, a), (second, b), ..] if *second >= SECOND_CALL_SHARE * total => format!(
            " in {}(2) ({:.0}%) and {}(2) ({:.0}%)",
            a.name,
            100.0 * first / total,
            b.name,
            100.0 * second / total
        ),
        [(_, first), ..] => format!(" in {}(2)", first.name),
    }
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

    /// Runs given one by one: `sides[k]` is run k's metrics.
    fn report_of(base: &[Vec<(&str, f64)>], patched: &[Vec<(&str, f64)>]) -> Comparison {
        let side = |runs: &[Vec<(&str, f64)>]| -> Vec<RunResult> {
            runs.iter()
                .map(|m| {
                    let mut r = run(m);
                    r.profile_event = Some("cpu-clock".into());
                    r
                })
                .collect()
        };
        compare("lab", &side(base), &side(patched))
    }

    /// An entry is placed in the call whose chains carry most of it: a
    /// spin lock reached through close(2) for 10 points and dup(2) for 1
    /// is close(2)'s; at 8 and 4, both are named with their shares.
    #[test]
    fn an_entry_is_placed_in_the_call_that_carries_most_of_it() {
        const LOCK: &str = "perf-profile.children.cycles-pp.native_queued_spin_lock_slowpath";
        let chain = |via: &str| {
            format!(
                "perf-profile.calltrace.cycles-pp.native_queued_spin_lock_slowpath.{via}.do_syscall_64"
            )
        };
        let (dup, close) = (chain("__x64_sys_dup"), chain("__x64_sys_close"));
        let why = |via_dup: f64, via_close: f64| {
            let base = [
                (OPS, 1000.0),
                (LOCK, 2.0),
                (dup.as_str(), 0.5),
                (close.as_str(), 0.5),
            ];
            let patched = [
                (OPS, 800.0),
                (LOCK, via_dup + via_close),
                (dup.as_str(), via_dup),
                (close.as_str(), via_close),
            ];
            report(&base, &patched).explanation.unwrap()
        };
        let one = why(1.0, 10.0);
        assert!(
            one.contains("`native_queued_spin_lock_slowpath` in close(2) 2.0% → "),
            "{one}"
        );
        let both = why(4.0, 8.0);
        assert!(
            both.contains("`native_queued_spin_lock_slowpath` in close(2) (67%) and dup(2) (33%) "),
            "{both}"
        );
    }

    /// cpu-clock jitter that 0-day's range rule calls a change, but the
    /// metrics' statistics do not, is not named: the profile is too coarse
    /// to say where.
    #[test]
    fn sampling_jitter_is_not_named_and_said_too_coarse() {
        const LOADER: &str = "perf-profile.children.cycles-pp._dl_start_user";
        let ops = |v: f64| [0.9999, 1.0, 1.0001].map(|f| v * f);
        let (b, p) = (ops(1000.0), ops(1250.0));
        let base: Vec<Vec<(&str, f64)>> = [9.0, 11.0, 10.0]
            .iter()
            .zip(b)
            .map(|(&l, o)| vec![(OPS, o), (LOADER, l)])
            .collect();
        // Every patched profile beyond the base's middle and their middle
        // beyond its top, but one of them far out: 0-day's rule, not a test.
        let patched: Vec<Vec<(&str, f64)>> = [10.5, 11.5, 20.0]
            .iter()
            .zip(p)
            .map(|(&l, o)| vec![(OPS, o), (LOADER, l)])
            .collect();
        let c = report_of(&base, &patched);
        let row = c.metric(LOADER).unwrap();
        assert!(
            row.zero_day.is_some_and(|z| z.changed),
            "0-day's rule calls it: {row:?}"
        );
        assert!(!row.verdict.is_change(), "our statistics do not: {row:?}");
        assert_eq!(
            c.explanation.as_deref(),
            Some(
                "dup1 +25.0%: 20.0% fewer instructions per dup(2) + close(2) \
                 (tcg-icount: guest time counts instructions); the profile is too coarse to \
                 say where: entries moved by 0-day's range rule, none significantly with 3 and 3 \
                 profiles (more runs can tell)"
            )
        );
    }
}
