//! The runs a lab's runners upload, made up but shaped like real ones:
//! will-it-scale's three metrics and per-second series, the kernel
//! pipeline's facts, and with perf the ~40 `perf-stat.*` metrics of the
//! runner's default events with their 14 per-second series and 100–200
//! `perf-profile.*` entries of the syscall paths these workloads exercise.
//! Every boot draws its own noise; a comparison's patched side may move
//! the throughput by a few percent, so verdicts differ between comparisons.

use patchperf_common::metric;
use patchperf_common::run::{
    KernelIdentity, MeasurementMode, MetricValue, RunResult, SecondSample, Series, Side, TaskMode,
};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// The events perf stat counts by default (the runner's
/// `perf::DEFAULT_STAT_EVENTS`), each with a per-CPU rate per second to
/// draw around.
const EVENTS: &[(&str, f64)] = &[
    ("cycles", 2.6e9),
    ("instructions", 4.4e9),
    ("branch-instructions", 9.0e8),
    ("branch-misses", 3.5e6),
    ("cache-references", 1.8e7),
    ("cache-misses", 1.1e6),
    ("task-clock", 1.0e3),
    ("context-switches", 12.0),
    ("cpu-migrations", 0.8),
    ("page-faults", 45.0),
];

/// 0-day's derived perf-stat metrics: name, numerator, denominator, scale.
const RATIOS: &[(&str, &str, &str, f64)] = &[
    ("ipc", "instructions", "cycles", 1.0),
    ("cpi", "cycles", "instructions", 1.0),
    (
        "branch-miss-rate%",
        "branch-misses",
        "branch-instructions",
        100.0,
    ),
    (
        "cache-miss-rate%",
        "cache-misses",
        "cache-references",
        100.0,
    ),
];

/// Kernel stacks of the open/dup/stat workloads, outermost frame first;
/// every prefix of two or more frames is a `perf-profile.calltrace` entry.
const STACKS: &[&[&str]] = &[
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_openat",
        "do_sys_openat2",
        "do_filp_open",
        "path_openat",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_openat",
        "do_sys_openat2",
        "getname_flags",
        "strncpy_from_user",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_openat",
        "do_sys_openat2",
        "alloc_fd",
        "_raw_spin_lock",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_close",
        "close_fd",
        "filp_close",
        "fput",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "syscall_exit_to_user_mode",
        "task_work_run",
        "__fput",
        "dput",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_dup",
        "alloc_fd",
        "fd_install",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_dup",
        "__fget_light",
        "__fget_files",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__do_sys_newfstat",
        "vfs_fstat",
        "vfs_getattr",
        "generic_fillattr",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__do_sys_newfstat",
        "cp_new_stat",
        "_copy_to_user",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_statx",
        "do_statx",
        "vfs_statx",
        "filename_lookup",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_newfstatat",
        "vfs_fstatat",
        "getname_flags",
        "kmem_cache_alloc",
    ],
    &[
        "path_openat",
        "link_path_walk",
        "walk_component",
        "lookup_fast",
        "__d_lookup_rcu",
    ],
    &[
        "path_openat",
        "alloc_empty_file",
        "init_file",
        "security_file_alloc",
        "apparmor_file_alloc_security",
    ],
    &[
        "path_openat",
        "do_dentry_open",
        "may_open",
        "inode_permission",
        "generic_permission",
    ],
    &[
        "path_openat",
        "open_last_lookups",
        "lookup_open",
        "d_alloc_parallel",
        "d_alloc",
    ],
    &[
        "path_openat",
        "complete_walk",
        "try_to_unlazy",
        "legitimize_path",
        "lockref_get_not_dead",
    ],
    &[
        "__fput",
        "security_file_free",
        "kmem_cache_free",
        "__slab_free",
    ],
    &[
        "do_filp_open",
        "path_openat",
        "terminate_walk",
        "mntput",
        "mntput_no_expire",
    ],
];

/// What a comparison asks for, as far as the runs are concerned.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Workload names.
    pub workloads: Vec<&'static str>,
    /// Task counts; each is its own report.
    pub nr_task: Vec<u32>,
    /// Boots a side.
    pub runs: u32,
    /// Measured seconds a run (points of each series).
    pub seconds: u32,
    /// perf stat and perf profile switched on.
    pub perf: bool,
    /// A/A: both sides boot the base kernel.
    pub aa: bool,
}

impl Shape {
    /// Runs one boot uploads.
    pub fn runs_per_boot(&self) -> usize {
        self.workloads.len() * self.nr_task.len()
    }
}

/// One comparison's made-up truth: its levels, which profile entries its
/// runs report and how far the patch moves throughput.
#[derive(Debug, Clone)]
pub struct Truth {
    seed: u64,
    /// Ops a task a second on the base kernel, per workload.
    ops: Vec<f64>,
    /// Patched ÷ base throughput (1 for A/A and for most patches).
    effect: f64,
    /// Relative standard deviation of throughput between boots.
    noise: f64,
    /// The `perf-profile.*` entries and their share (%) on the base kernel.
    profile: Vec<(String, f64)>,
}

/// Which way the patch of comparison number `n` moves throughput: most
/// patches do nothing measurable, some regress, a few improve, by 2–8%.
fn effect(rng: &mut StdRng, n: u64) -> f64 {
    let size = rng.random_range(0.02..0.08);
    match n % 20 {
        0..=2 => 1.0 - size,
        3..=4 => 1.0 + size,
        _ => 1.0,
    }
}

/// Every profile entry these stacks give: children and self of each
/// frame, calltraces of each prefix.
fn profile_names() -> Vec<(String, bool)> {
    let mut frames: Vec<&str> = STACKS.iter().flat_map(|s| s.iter().copied()).collect();
    frames.sort_unstable();
    frames.dedup();
    let mut names: Vec<(String, bool)> = Vec::new();
    for f in &frames {
        names.push((metric::perf_profile_children(f), true));
        names.push((metric::perf_profile_self(f), false));
    }
    let mut traces: Vec<String> = STACKS
        .iter()
        .flat_map(|s| (2..=s.len()).map(|k| metric::perf_profile_calltrace(&s[..k])))
        .collect();
    traces.sort_unstable();
    traces.dedup();
    names.extend(traces.into_iter().map(|t| (t, true)));
    names
}

impl Truth {
    /// The truth of comparison number `n` of `shape`; `noise` is the
    /// machine's boot-to-boot spread of throughput.
    pub fn new(n: u64, shape: &Shape, noise: f64) -> Truth {
        let mut rng = StdRng::seed_from_u64(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let ops = shape
            .workloads
            .iter()
            .map(|_| rng.random_range(4.0e5..2.5e6))
            .collect();
        let effect = if shape.aa { 1.0 } else { effect(&mut rng, n) };
        let mut profile = Vec::new();
        if shape.perf {
            let mut all = profile_names();
            all.shuffle(&mut rng);
            all.truncate(rng.random_range(100..=200).min(all.len()));
            profile = all
                .into_iter()
                .map(|(name, inclusive)| {
                    let share = if inclusive {
                        rng.random_range(0.5..60.0)
                    } else {
                        rng.random_range(0.05..12.0)
                    };
                    (name, share)
                })
                .collect();
        }
        Truth {
            seed: n,
            ops,
            effect,
            noise,
            profile,
        }
    }

    /// Every run boot `seq` of `side` uploads.
    pub fn boot(&self, shape: &Shape, seq: u32, side: Side) -> Vec<RunResult> {
        let mut rng = StdRng::seed_from_u64(self.seed.wrapping_mul(1_000_003) ^ u64::from(seq));
        let patched = side == Side::Patched && !shape.aa;
        // One boot: the same kernel image, its own cache layout and timing.
        let boot_factor = 1.0 + self.noise * normal(&mut rng);
        let mut out = Vec::with_capacity(shape.runs_per_boot());
        for (w, workload) in shape.workloads.iter().enumerate() {
            for &nr_task in &shape.nr_task {
                let per_task = self.ops[w]
                    * 0.93_f64.powf(f64::from(nr_task).log2())
                    * boot_factor
                    * if patched { self.effect } else { 1.0 };
                out.push(self.run(&mut rng, shape, workload, nr_task, per_task, patched));
            }
        }
        out
    }

    fn run(
        &self,
        rng: &mut StdRng,
        shape: &Shape,
        workload: &str,
        nr_task: u32,
        per_task: f64,
        patched: bool,
    ) -> RunResult {
        let mode = TaskMode::Process;
        let tasks = f64::from(nr_task);
        let seconds = shape.seconds.max(1);
        let per_second: Vec<f64> = (0..seconds)
            .map(|_| (per_task * tasks * (1.0 + 0.003 * normal(rng))).round())
            .collect();
        let total: f64 = per_second.iter().sum();
        let mean_total = total / f64::from(seconds);
        let scaling = metric::wis_scaling(nr_task, mode);
        let mut metrics = vec![
            value(metric::wis_per_task_ops(mode), mean_total / tasks),
            value(metric::WIS_WORKLOAD.to_string(), total),
            value(scaling.clone(), mean_total),
            value(
                metric::KERNEL_BUILD_SECONDS.to_string(),
                rng.random_range(25.0..400.0_f64).round(),
            ),
            value(
                metric::KERNEL_BOOT_SECONDS.to_string(),
                rng.random_range(3.0..9.0),
            ),
            value(
                metric::KERNEL_IMAGE_BYTES.to_string(),
                13_631_488.0 + if patched { 4096.0 } else { 0.0 },
            ),
        ];
        let mut series = vec![Series {
            name: scaling,
            interval_seconds: 1.0,
            points: per_second.clone(),
        }];
        if shape.perf {
            self.perf_stat(rng, tasks, seconds, mean_total, &mut metrics, &mut series);
            let shift = if patched { self.effect } else { 1.0 };
            for (name, share) in &self.profile {
                let v = share * (1.0 + 0.03 * normal(rng)) / shift.powi(2);
                metrics.push(value(name.clone(), v.clamp(0.05, 100.0)));
            }
        }
        RunResult {
            workload: workload.to_string(),
            mode,
            nr_task,
            warmup_seconds: 2,
            seconds,
            measurement: MeasurementMode::Kvm,
            kernel: Some(KernelIdentity {
                release: if patched { "6.1.0-patched" } else { "6.1.0" }.into(),
                source: "linux-source-6.1 (sha256 5f0e9c…)".into(),
                patches_sha256: None,
                patches: None,
                config_sha256: format!("{:064x}", self.seed),
                compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
                version: "#1 SMP PREEMPT_DYNAMIC".into(),
            }),
            samples: per_second
                .iter()
                .map(|&t| SecondSample {
                    total: t as u64,
                    min: (t / tasks * 0.97) as u64,
                    max: (t / tasks * 1.03) as u64,
                })
                .collect(),
            metrics,
            series,
            unsupported: Vec::new(),
            profile_event: shape.perf.then(|| "cycles".to_string()),
            warnings: Vec::new(),
        }
    }

    /// The `perf-stat.*` metrics and their per-second series: each event's
    /// total, rate and mean interval rate, the derived ratios and the path
    /// length (instructions per operation).
    fn perf_stat(
        &self,
        rng: &mut StdRng,
        tasks: f64,
        seconds: u32,
        ops_per_second: f64,
        metrics: &mut Vec<MetricValue>,
        series: &mut Vec<Series>,
    ) {
        let mut rates: Vec<(&str, Vec<f64>)> = Vec::new();
        for &(event, rate) in EVENTS {
            let level = rate * tasks * (1.0 + 0.01 * normal(rng));
            let points: Vec<f64> = (0..seconds)
                .map(|_| (level * (1.0 + 0.005 * normal(rng))).max(0.0))
                .collect();
            let total: f64 = points.iter().sum();
            metrics.push(value(metric::perf_stat_total(event), total));
            metrics.push(value(
                metric::perf_stat_ps(event),
                total / f64::from(seconds),
            ));
            metrics.push(value(metric::perf_stat_i(event), mean(&points)));
            series.push(Series {
                name: metric::perf_stat_i(event),
                interval_seconds: 1.0,
                points: points.clone(),
            });
            rates.push((event, points));
        }
        let of = |e: &str| rates.iter().find(|(n, _)| *n == e).map(|(_, p)| p);
        for &(name, num, den, scale) in RATIOS {
            let (Some(n), Some(d)) = (of(num), of(den)) else {
                continue;
            };
            let per_interval: Vec<f64> = n.iter().zip(d).map(|(a, b)| scale * a / b).collect();
            let overall = scale * n.iter().sum::<f64>() / d.iter().sum::<f64>();
            metrics.push(value(metric::perf_stat_overall(name), overall));
            metrics.push(value(metric::perf_stat_i(name), mean(&per_interval)));
            series.push(Series {
                name: metric::perf_stat_i(name),
                interval_seconds: 1.0,
                points: per_interval,
            });
        }
        if let Some(instructions) = of("instructions") {
            metrics.push(value(
                metric::perf_stat_overall("path-length"),
                mean(instructions) / ops_per_second.max(1.0),
            ));
        }
    }
}

fn value(name: String, value: f64) -> MetricValue {
    MetricValue { name, value }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.random_range(f64::EPSILON..1.0);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(perf: bool) -> Shape {
        Shape {
            workloads: vec!["dup1", "open1"],
            nr_task: vec![1, 2, 4],
            runs: 3,
            seconds: 10,
            perf,
            aa: false,
        }
    }

    #[test]
    fn runs_pass_the_servers_checks_and_carry_the_issues_shape() {
        let s = shape(true);
        let t = Truth::new(7, &s, 0.005);
        let runs = t.boot(&s, 0, Side::Base);
        assert_eq!(runs.len(), 6);
        for r in &runs {
            r.validate().unwrap();
            let stat = r
                .metrics
                .iter()
                .filter(|m| m.name.starts_with("perf-stat."))
                .count();
            let profile = r
                .metrics
                .iter()
                .filter(|m| m.name.starts_with("perf-profile."))
                .count();
            assert_eq!(stat, 39);
            assert!((100..=200).contains(&profile), "{profile}");
            assert_eq!(r.series.len(), 15);
        }
        let lean = Truth::new(8, &shape(false), 0.005).boot(&shape(false), 1, Side::Patched);
        assert!(
            lean.iter()
                .all(|r| r.metrics.len() == 6 && r.series.len() == 1)
        );
    }

    #[test]
    fn boots_differ() {
        let s = shape(false);
        let t = Truth::new(3, &s, 0.005);
        let a = t.boot(&s, 0, Side::Base);
        let b = t.boot(&s, 2, Side::Base);
        assert_ne!(a[0].metrics[0].value, b[0].metrics[0].value);
    }
}
