//! Turns sampled call stacks into 0-day's `perf-profile.*` metrics, computed
//! the way 0-day gets them from `perf report --children` with folded,
//! callee-ordered call chains (lkp-tests `programs/perf-profile/parse`), but
//! from the raw samples, so nothing depends on perf report's layout.
//!
//! Every number is a share of all sampled weight (the sum of the sample
//! periods, as perf report weighs samples), in percent:
//!
//! - `perf-profile.self.cycles-pp.<sym>`: samples taken in `<sym>` itself
//!   (perf report's "Self" column);
//! - `perf-profile.children.cycles-pp.<sym>`: samples with `<sym>` anywhere on
//!   the stack, each sample counted once however often `<sym>` appears
//!   (perf report's "Children" column);
//! - `perf-profile.calltrace.cycles-pp.<f1>.<f2>…`: in children mode perf
//!   report files each sample under every distinct function on its stack,
//!   and under each function `f` shows the chain from `f` outwards to the
//!   outermost caller (callee order: `f`, its caller, that one's caller, …).
//!   0-day keeps the first five functions of every such chain and adds up the
//!   shares of chains that agree in them. So `f1` is the function the entry is
//!   about, `f2` the one that called it, and so on outwards; that is why the
//!   user-space syscall wrapper comes last, as in
//!   `calltrace.cycles-pp.alloc_fd.__x64_sys_dup.do_syscall_64.entry_SYSCALL_64_after_hwframe.dup`,
//!   and why a trace can be shorter than five when the stack ends, as in
//!   `calltrace.cycles-pp.entry_SYSCALL_64_after_hwframe.dup`. The share of a
//!   trace is the share of samples whose stack, from `f1` outwards, starts
//!   with those functions; the traces starting with `f1` add up to
//!   `children` of `f1` (minus the ones dropped for being small).
//!
//! Like 0-day, names lose gcc's clone suffixes (`.isra.N`, `.constprop.N`,
//! `.part.N`) and entries with the same cleaned name are added up. A sample
//! counts once per name on its stack: where perf report would file it under
//! both `foo` and `foo.part.0` (or one symbol in two DSOs), and 0-day's sum
//! would count it twice, here it counts once, so a share never passes 100%.
//! Entries under 0.05% are dropped, as 0-day drops them.
//!
//! A stack is cut at its first frame perf could not resolve (`[unknown]`):
//! frame-pointer unwinding through code built without frame pointers yields
//! garbage from there on, and an address has no name to report. A sample
//! whose own frame is unresolved still counts in the total.

use std::collections::HashMap;

use patchperf_common::metric;
use patchperf_common::run::MetricValue;

use super::parse::{Frame, Sample};

/// Entries below this share (in %) are dropped, as 0-day drops them.
pub const MIN_PERCENT: f64 = 0.05;

/// How many frames a calltrace name keeps.
pub const CALLTRACE_FRAMES: usize = 5;

/// The sums a profile is made of, filled one sample at a time.
#[derive(Debug, Default, Clone)]
pub struct Profile {
    total: u128,
    samples: u64,
    kernel_samples: u64,
    self_weight: HashMap<String, u128>,
    children_weight: HashMap<String, u128>,
    calltrace_weight: HashMap<Vec<String>, u128>,
}

impl Profile {
    /// An empty profile.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample.
    pub fn add(&mut self, sample: &Sample) {
        let weight = u128::from(sample.period);
        self.total += weight;
        self.samples += 1;
        let resolved = sample
            .frames
            .iter()
            .position(|frame| frame.symbol.is_none())
            .unwrap_or(sample.frames.len());
        let frames = &sample.frames[..resolved];
        if frames.is_empty() {
            return;
        }
        if frames.iter().any(|f| f.dso == "[kernel.kallsyms]") {
            self.kernel_samples += 1;
        }
        let names: Vec<String> = frames.iter().map(frame_name).collect();
        *self.self_weight.entry(names[0].clone()).or_default() += weight;
        for depth in 0..names.len() {
            // Once per name on a stack, so that no share passes 100%: two
            // frames named alike (`foo` calling `foo.part.0`, one symbol in
            // two DSOs) are one entry in the metrics.
            if names[..depth].contains(&names[depth]) {
                continue;
            }
            *self
                .children_weight
                .entry(names[depth].clone())
                .or_default() += weight;
            let trace: Vec<String> = names[depth..]
                .iter()
                .take(CALLTRACE_FRAMES)
                .cloned()
                .collect();
            *self.calltrace_weight.entry(trace).or_default() += weight;
        }
    }

    /// Number of samples added.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Number of samples with at least one resolved kernel frame.
    pub fn kernel_samples(&self) -> u64 {
        self.kernel_samples
    }

    /// The `perf-profile.*` metrics: children, then self, then calltrace,
    /// each sorted by name; entries under [`MIN_PERCENT`] left out.
    pub fn metrics(&self) -> Vec<MetricValue> {
        let mut out = Vec::new();
        self.push_family(&mut out, &self.children_weight, |s| {
            metric::perf_profile_children(s)
        });
        self.push_family(&mut out, &self.self_weight, |s| {
            metric::perf_profile_self(s)
        });
        let mut traces: Vec<MetricValue> = self
            .calltrace_weight
            .iter()
            .filter_map(|(frames, &weight)| {
                self.percent(weight).map(|value| MetricValue {
                    name: metric::perf_profile_calltrace(frames),
                    value,
                })
            })
            .collect();
        traces.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(traces);
        out
    }

    fn push_family(
        &self,
        out: &mut Vec<MetricValue>,
        weights: &HashMap<String, u128>,
        name: impl Fn(&str) -> String,
    ) {
        let mut family: Vec<MetricValue> = weights
            .iter()
            .filter_map(|(symbol, &weight)| {
                self.percent(weight).map(|value| MetricValue {
                    name: name(symbol),
                    value,
                })
            })
            .collect();
        family.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(family);
    }

    /// `weight` as a share of the total in %, if it is big enough to report.
    fn percent(&self, weight: u128) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        // The fraction first: weight ≤ total keeps it ≤ 1 after rounding.
        let percent = weight as f64 / self.total as f64 * 100.0;
        (percent >= MIN_PERCENT).then_some(percent)
    }
}

fn symbol(frame: &Frame) -> &str {
    frame.symbol.as_deref().unwrap_or("[unknown]")
}

/// The harness's loop function, as perf script names it (demangled; its
/// generic arguments may follow).
const HARNESS_LOOP: &str = "patchperf_runner::harness::tasks::task_loop";

/// A frame's name in metric names: the symbol without gcc's clone
/// suffixes, and the harness loop called `testcase` as will-it-scale's
/// loop function is, so calltraces read as in 0-day's reports
/// (`…entry_SYSCALL_64_after_hwframe.testcase`).
fn frame_name(frame: &Frame) -> String {
    let name = symbol(frame);
    if name.starts_with(HARNESS_LOOP) {
        return "testcase".to_string();
    }
    clean_symbol(name)
}

/// Drops gcc's clone suffixes `.isra.N`, `.constprop.N` and `.part.N`
/// wherever they occur (`foo.constprop.0.isra.0` → `foo`), as 0-day does.
pub fn clean_symbol(symbol: &str) -> String {
    let mut out = String::with_capacity(symbol.len());
    let mut rest = symbol;
    'scan: while let Some(dot) = rest.find('.') {
        out.push_str(&rest[..dot]);
        let after_dot = &rest[dot + 1..];
        for suffix in ["isra.", "constprop.", "part."] {
            if let Some(digits) = after_dot.strip_prefix(suffix) {
                let len = digits.bytes().take_while(u8::is_ascii_digit).count();
                if len > 0 {
                    rest = &digits[len..];
                    continue 'scan;
                }
            }
        }
        out.push('.');
        rest = after_dot;
    }
    out.push_str(rest);
    out
}
