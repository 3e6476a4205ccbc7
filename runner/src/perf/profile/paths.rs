//! The kernel functions a workload's own system calls run through, counted
//! from the same samples as the profile: what `patchperf-runner
//! workload-map` turns into the files each workload exercises.
//!
//! A sample counts when it was taken in one of the workload's tasks (by
//! their `comm`: the harness names a task process after its workload, a
//! task thread `<workload>/<i>`) inside a system call (`do_syscall_64` on
//! its stack): after the start gate the tasks make nothing but the
//! workload's calls, so perf's own samples, the runner's and idle time
//! stay out. (The calls' own entry points cannot pick the samples: since
//! 6.9 the small `__x64_sys_*` wrappers are inlined into the dispatcher
//! `x64_sys_call()`, and `__x64_sys_read` is on no stack.) Where an
//! interrupt or exception hit the call, the handler's frames (everything
//! inside the outermost `asm_*` entry stub) are not the workload's code
//! and are dropped; the interrupted frames below it are kept. Each
//! function counts once per sample, under its symbol as the kernel names
//! it (clone suffixes kept: `nm` and `addr2line` find `foo.isra.0`, not
//! `foo`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::parse::Sample;

/// The dso perf names the kernel's frames with.
const KERNEL: &str = "[kernel.kallsyms]";

/// The kernel's syscall dispatcher, on the stack of every system call.
const SYSCALL: &str = "do_syscall_64";

/// Sums of one run's samples through its syscall paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallPaths {
    /// The workload, whose name its tasks carry.
    pub workload: String,
    /// Samples of the whole recording.
    pub samples: u64,
    /// Samples of the workload's tasks in a system call.
    pub through: u64,
    /// Kernel function → samples of those with it on the stack.
    pub functions: BTreeMap<String, u64>,
}

impl SyscallPaths {
    /// Empty sums for `workload`'s tasks.
    pub fn new(workload: impl Into<String>) -> Self {
        SyscallPaths {
            workload: workload.into(),
            ..SyscallPaths::default()
        }
    }

    /// Whether a thread named `comm` is one of the workload's tasks: a
    /// process named after it, or a thread `<workload>/<i>` (both cut to
    /// the kernel's 15 bytes).
    fn is_task(&self, comm: &str) -> bool {
        let cut = |s: &str| s.char_indices().nth(15).map_or(s.len(), |(i, _)| i);
        let name = &self.workload[..cut(&self.workload)];
        comm == name || {
            let thread = format!("{}/", self.workload);
            comm.starts_with(&thread[..cut(&thread)])
        }
    }

    /// Adds one sample.
    pub fn add(&mut self, sample: &Sample) {
        self.samples += 1;
        if !self.is_task(&sample.comm) {
            return;
        }
        // Innermost first: an interrupt's frames come before the `asm_*`
        // stub perf unwound through into the interrupted code.
        let from = sample
            .frames
            .iter()
            .rposition(|f| f.dso == KERNEL && f.symbol.as_deref().is_some_and(is_entry_stub))
            .map_or(0, |stub| stub + 1);
        let kernel: Vec<&str> = sample.frames[from..]
            .iter()
            .filter(|f| f.dso == KERNEL)
            .filter_map(|f| f.symbol.as_deref())
            .collect();
        if !kernel.contains(&SYSCALL) {
            return;
        }
        self.through += 1;
        let mut seen: Vec<&str> = Vec::with_capacity(kernel.len());
        for symbol in kernel {
            if !seen.contains(&symbol) {
                seen.push(symbol);
                *self.functions.entry(symbol.to_string()).or_default() += 1;
            }
        }
    }
}

/// An interrupt or exception entry stub (`asm_sysvec_apic_timer_interrupt`,
/// `asm_common_interrupt`, `asm_exc_page_fault`).
fn is_entry_stub(symbol: &str) -> bool {
    symbol.starts_with("asm_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::profile::parse::parse_script;

    // perf script output of a poll1 guest, shortened: a sample in the
    // syscall, one with a timer interrupt on top of it, one of the runner
    // waiting for the next second, one of perf itself and one of the idle
    // loop.
    const SCRIPT: &str = "\
poll1   201   1001001
\tffffffff811d5e10 do_sys_poll ([kernel.kallsyms])
\tffffffff811d6a77 __x64_sys_poll ([kernel.kallsyms])
\tffffffff81b1a3c8 do_syscall_64 ([kernel.kallsyms])
\tffffffff81c0006b entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t           1b2c3 syscall (/usr/lib/x86_64-linux-gnu/libc.so.6)

poll1   201   1001001
\tffffffff810f0e11 update_process_times ([kernel.kallsyms])
\tffffffff81b1c101 sysvec_apic_timer_interrupt ([kernel.kallsyms])
\tffffffff81c00caa asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\tffffffff811d5e55 do_sys_poll.isra.0 ([kernel.kallsyms])
\tffffffff811d6a77 __x64_sys_poll ([kernel.kallsyms])
\tffffffff81b1a3c8 do_syscall_64 ([kernel.kallsyms])

patchperf-runne   1   1001001
\tffffffff8110ab10 hrtimer_nanosleep ([kernel.kallsyms])
\tffffffff81b1a3c8 do_syscall_64 ([kernel.kallsyms])

perf   190   1001001
\tffffffff811c0b12 vfs_write ([kernel.kallsyms])
\tffffffff811c0e90 ksys_write ([kernel.kallsyms])
\tffffffff81b1a3c8 do_syscall_64 ([kernel.kallsyms])

swapper     0   1001001
\tffffffff81b2f0a1 default_idle ([kernel.kallsyms])
";

    #[test]
    fn only_the_workload_s_syscall_frames_count_interrupts_cut_off() {
        let mut paths = SyscallPaths::new("poll1");
        for sample in parse_script(SCRIPT).unwrap() {
            paths.add(&sample);
        }
        assert_eq!((paths.samples, paths.through), (5, 2));
        let functions: Vec<(&str, u64)> = paths
            .functions
            .iter()
            .map(|(f, n)| (f.as_str(), *n))
            .collect();
        assert_eq!(
            functions,
            [
                ("__x64_sys_poll", 2),
                ("do_sys_poll", 1),
                ("do_sys_poll.isra.0", 1),
                ("do_syscall_64", 2),
                ("entry_SYSCALL_64_after_hwframe", 1),
            ]
        );
    }

    #[test]
    fn an_interrupt_hitting_user_space_counts_for_nothing() {
        let script = "\
poll1   201   1001001
\tffffffff810f0e11 update_process_times ([kernel.kallsyms])
\tffffffff81c00caa asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\t           1b2c3 testcase (/usr/bin/patchperf-runner)
";
        let mut paths = SyscallPaths::new("poll1");
        for sample in parse_script(script).unwrap() {
            paths.add(&sample);
        }
        assert_eq!((paths.samples, paths.through), (1, 0));
        assert!(paths.functions.is_empty());
    }

    #[test]
    fn tasks_are_known_by_their_names_cut_as_the_kernel_cuts_them() {
        let fstat = SyscallPaths::new("fstat");
        assert!(fstat.is_task("fstat"));
        assert!(fstat.is_task("fstat/3"));
        assert!(!fstat.is_task("fstatat-empty"));
        assert!(!fstat.is_task("fstatat-empty/0"));
        assert!(!fstat.is_task("patchperf-runne"));
        let long = SyscallPaths::new("fstatat-empty");
        assert!(long.is_task("fstatat-empty"));
        // `fstatat-empty/12` is 16 bytes: the kernel keeps 15.
        assert!(long.is_task("fstatat-empty/1"));
    }
}
