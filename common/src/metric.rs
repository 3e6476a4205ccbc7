//! Metric names exactly as 0-day's reports print them, and which way is
//! better for each. Every producer (workload harness, perf collectors, kernel
//! pipeline) builds names through these functions so the server, the text
//! report and the runner can never disagree on spelling.

use serde::{Deserialize, Serialize};

use crate::workload::TaskMode;

/// Mean over measured seconds of (ops in that second ÷ nr_task):
/// `will-it-scale.per_process_ops` or `will-it-scale.per_thread_ops`.
pub fn wis_per_task_ops(mode: TaskMode) -> String {
    format!("will-it-scale.per_{}_ops", mode.as_str())
}

/// Total ops over the measured seconds.
pub const WIS_WORKLOAD: &str = "will-it-scale.workload";

/// Ops per second with `nr_task` tasks: `will-it-scale.8.processes`.
pub fn wis_scaling(nr_task: u32, mode: TaskMode) -> String {
    format!("will-it-scale.{nr_task}.{}", mode.plural())
}

/// `perf-stat.ps.<event>`: total count ÷ measured seconds.
pub fn perf_stat_ps(event: &str) -> String {
    format!("perf-stat.ps.{event}")
}

/// `perf-stat.i.<event>`: mean of the per-interval (1 s) rates.
pub fn perf_stat_i(event: &str) -> String {
    format!("perf-stat.i.{event}")
}

/// `perf-stat.total.<event>`: total count over the measured seconds.
pub fn perf_stat_total(event: &str) -> String {
    format!("perf-stat.total.{event}")
}

/// `perf-stat.overall.<derived>`: derived from totals (`ipc`, `cpi`,
/// `branch-miss-rate%`, `cache-miss-rate%`, `path-length`).
pub fn perf_stat_overall(derived: &str) -> String {
    format!("perf-stat.overall.{derived}")
}

/// `perf-profile.children.cycles-pp.<sym>`: inclusive share of samples, in %.
pub fn perf_profile_children(sym: &str) -> String {
    format!("perf-profile.children.cycles-pp.{sym}")
}

/// `perf-profile.self.cycles-pp.<sym>`: exclusive share of samples, in %.
pub fn perf_profile_self(sym: &str) -> String {
    format!("perf-profile.self.cycles-pp.{sym}")
}

/// `perf-profile.calltrace.cycles-pp.<f1>.<f2>…`: share of samples whose
/// stack starts (outermost first, as 0-day prints it) with these frames, in %.
pub fn perf_profile_calltrace<S: AsRef<str>>(frames: &[S]) -> String {
    let mut name = String::from("perf-profile.calltrace.cycles-pp");
    for frame in frames {
        name.push('.');
        name.push_str(frame.as_ref());
    }
    name
}

/// Seconds `make bzImage` took for this side's kernel.
pub const KERNEL_BUILD_SECONDS: &str = "kernel.build_seconds";
/// Seconds from starting the boot to the guest's workload driver running.
pub const KERNEL_BOOT_SECONDS: &str = "kernel.boot_seconds";
/// Size of the built kernel image.
pub const KERNEL_IMAGE_BYTES: &str = "kernel.image_bytes";

/// Whether a metric is a fact about the pipeline (`kernel.build_seconds`,
/// `kernel.boot_seconds`, `kernel.image_bytes`) rather than a measurement of
/// the kernel's syscall paths. Reports show these beside the header, not as
/// table rows with verdicts: a cached base build against an incremental
/// patched build says nothing about the patch.
pub fn is_pipeline_fact(name: &str) -> bool {
    name.starts_with("kernel.")
}

/// Which way a change of this metric is good news.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// More is better (throughput).
    HigherIsBetter,
    /// Less is better (instructions per op, cycles per instruction, misses).
    LowerIsBetter,
    /// Reported, but neither way is a verdict on the patch by itself.
    Neutral,
}

/// The direction of a metric, from its name. Of perf stat's, only the
/// ratios have one (instructions per operation, cycles per instruction,
/// miss rates): an event's count a second (`ps.`, `i.`) or in all
/// (`total.`) follows throughput, so fewer cache misses a second inside a
/// regression are fewer operations, not an improvement.
pub fn direction(name: &str) -> Direction {
    if name.starts_with("will-it-scale.") {
        return Direction::HigherIsBetter;
    }
    if let Some(rest) = name.strip_prefix("perf-stat.") {
        let derived = rest.rsplit_once('.').map_or(rest, |(_, last)| last);
        return match derived {
            "path-length" | "cpi" | "cache-miss-rate%" | "branch-miss-rate%" => {
                Direction::LowerIsBetter
            }
            "ipc" => Direction::HigherIsBetter,
            _ => Direction::Neutral,
        };
    }
    if name == KERNEL_BUILD_SECONDS || name == KERNEL_BOOT_SECONDS {
        return Direction::LowerIsBetter;
    }
    Direction::Neutral
}

/// Whether a metric is itself a percentage, so that its `%change` column
/// shows the difference in points rather than a relative change (0-day does
/// this for perf-profile entries and for names ending in `%`).
pub fn is_percentage(name: &str) -> bool {
    name.starts_with("perf-profile.") || name.ends_with('%')
}

/// What a metric's values count, for axis labels: `ops/s per task`,
/// `events/s`, `% of samples`; empty for a name it does not know.
pub fn unit(name: &str) -> &'static str {
    if name == WIS_WORKLOAD {
        return "ops";
    }
    if name.starts_with("will-it-scale.per_") {
        return "ops/s per task";
    }
    if name.starts_with("will-it-scale.") {
        return "ops/s";
    }
    if name.starts_with("perf-profile.") {
        return "% of samples";
    }
    if name.ends_with('%') {
        return "%";
    }
    if let Some(rest) = name.strip_prefix("perf-stat.") {
        let (kind, what) = rest.split_once('.').unwrap_or(("", rest));
        return match (kind, what) {
            (_, "ipc") => "instructions/cycle",
            (_, "cpi") => "cycles/instruction",
            (_, "path-length") => "instructions/op",
            ("ps" | "i", "cpu-clock" | "task-clock") => "ms/s",
            ("total", "cpu-clock" | "task-clock") => "ms",
            ("ps" | "i", _) => "events/s",
            ("total", _) => "events",
            _ => "",
        };
    }
    match name {
        KERNEL_BUILD_SECONDS | KERNEL_BOOT_SECONDS => "s",
        KERNEL_IMAGE_BYTES => "bytes",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_name_what_is_counted() {
        for (name, unit) in [
            ("will-it-scale.per_process_ops", "ops/s per task"),
            ("will-it-scale.per_thread_ops", "ops/s per task"),
            ("will-it-scale.8.processes", "ops/s"),
            ("will-it-scale.workload", "ops"),
            ("perf-stat.ps.context-switches", "events/s"),
            ("perf-stat.i.cpu-clock", "ms/s"),
            ("perf-stat.total.page-faults", "events"),
            ("perf-stat.overall.ipc", "instructions/cycle"),
            ("perf-stat.i.ipc", "instructions/cycle"),
            ("perf-stat.overall.path-length", "instructions/op"),
            ("perf-stat.overall.branch-miss-rate%", "%"),
            (
                "perf-profile.children.cycles-pp.do_sys_openat2",
                "% of samples",
            ),
            ("perf-profile.calltrace.cycles-pp.a.b", "% of samples"),
            ("kernel.boot_seconds", "s"),
            ("kernel.image_bytes", "bytes"),
            ("something.else", ""),
        ] {
            assert_eq!(super::unit(name), unit, "{name}");
        }
    }

    #[test]
    fn names_are_spelled_as_in_the_0day_report() {
        assert_eq!(
            wis_per_task_ops(TaskMode::Process),
            "will-it-scale.per_process_ops"
        );
        assert_eq!(
            wis_per_task_ops(TaskMode::Thread),
            "will-it-scale.per_thread_ops"
        );
        assert_eq!(
            wis_scaling(256, TaskMode::Process),
            "will-it-scale.256.processes"
        );
        assert_eq!(wis_scaling(2, TaskMode::Thread), "will-it-scale.2.threads");
        assert_eq!(perf_stat_i("cpi"), "perf-stat.i.cpi");
        assert_eq!(
            perf_stat_overall("path-length"),
            "perf-stat.overall.path-length"
        );
        assert_eq!(
            perf_profile_calltrace(&["alloc_fd", "__x64_sys_dup", "do_syscall_64"]),
            "perf-profile.calltrace.cycles-pp.alloc_fd.__x64_sys_dup.do_syscall_64"
        );
        assert_eq!(
            perf_profile_self("alloc_fd"),
            "perf-profile.self.cycles-pp.alloc_fd"
        );
    }

    #[test]
    fn directions_follow_the_design() {
        assert_eq!(
            direction("will-it-scale.per_process_ops"),
            Direction::HigherIsBetter
        );
        assert_eq!(
            direction("perf-stat.overall.path-length"),
            Direction::LowerIsBetter
        );
        assert_eq!(direction("perf-stat.i.cpi"), Direction::LowerIsBetter);
        assert_eq!(
            direction("perf-stat.overall.ipc"),
            Direction::HigherIsBetter
        );
        // A rate a second follows throughput: no direction of its own.
        assert_eq!(direction("perf-stat.ps.cache-misses"), Direction::Neutral);
        assert_eq!(direction("perf-stat.ps.branch-misses"), Direction::Neutral);
        assert_eq!(direction("perf-stat.i.cache-misses"), Direction::Neutral);
        assert_eq!(
            direction("perf-stat.overall.cache-miss-rate%"),
            Direction::LowerIsBetter
        );
        assert_eq!(direction("perf-stat.ps.instructions"), Direction::Neutral);
        assert_eq!(
            direction("perf-profile.self.cycles-pp.alloc_fd"),
            Direction::Neutral
        );
    }

    #[test]
    fn percentages_are_profile_entries_and_names_ending_in_percent() {
        assert!(is_percentage(
            "perf-profile.children.cycles-pp.do_syscall_64"
        ));
        assert!(is_percentage("perf-stat.i.branch-miss-rate%"));
        assert!(!is_percentage("perf-stat.i.cpi"));
    }
}
