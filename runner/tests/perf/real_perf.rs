//! The collectors against this machine's real perf, around a real dup + close
//! loop. Skipped (with the reason printed) where perf is missing or may not
//! count system-wide.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use patchperf_common::protocol::{NrTask, WorkloadParams};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, TaskMode};
use patchperf_runner::harness::Collector;
use patchperf_runner::kernel::boot::guest_protocol::{GuestRequest, GuestRun};
use patchperf_runner::perf::env::{Perf, kernel_symbols_warning};
use patchperf_runner::perf::profile::paths::SyscallPaths;
use patchperf_runner::perf::{PerfOptions, PerfStat, PerfTool, setup};

/// The tests here measure the machine; running them side by side would
/// make each one's perf slow to start and its numbers a mix.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Warnings saying a perf collector failed or could not run.
fn perf_failures(run: &RunResult) -> Vec<&String> {
    run.warnings
        .iter()
        .filter(|w| {
            w.starts_with("perf-stat:")
                || w.starts_with("perf-profile:")
                || w.contains("perf not found")
                || w.contains("paranoid")
        })
        .collect()
}

fn perf_or_skip() -> Option<Perf> {
    match Perf::detect(&PerfOptions::default().program) {
        Ok(perf) => Some(perf),
        Err(reason) => {
            println!("skipping: {reason}");
            None
        }
    }
}

fn empty_run() -> RunResult {
    RunResult {
        workload: "dup1".into(),
        mode: TaskMode::Thread,
        nr_task: 2,
        warmup_seconds: 0,
        seconds: 4,
        measurement: MeasurementMode::Host,
        kernel: None,
        samples: Vec::new(),
        metrics: Vec::new(),
        series: Vec::new(),
        unsupported: Vec::new(),
        profile_event: None,
        warnings: Vec::new(),
    }
}

/// Two threads doing dup + close until dropped; counts the pairs.
struct DupLoad {
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl DupLoad {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let threads = (0..2)
            .map(|_| {
                let (stop, ops) = (stop.clone(), ops.clone());
                std::thread::spawn(move || {
                    let file = std::fs::File::open("/dev/null").unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        drop(nix::unistd::dup(&file).unwrap());
                        ops.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        Self { stop, ops, threads }
    }

    fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }
}

impl Drop for DupLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn metric(run: &RunResult, name: &str) -> Option<f64> {
    run.metrics.iter().find(|m| m.name == name).map(|m| m.value)
}

#[test]
fn stat_and_profile_measure_a_real_dup_loop() {
    let Some(_) = perf_or_skip() else { return };
    let _alone = one_at_a_time();
    let perf = setup(
        &[PerfTool::Stat, PerfTool::Profile],
        &PerfOptions::default(),
    );
    assert_eq!(perf.collectors.len(), 1, "{:?}", perf.warnings);
    assert!(perf.warnings.is_empty(), "{:?}", perf.warnings);

    let load = DupLoad::start();
    std::thread::sleep(Duration::from_millis(300));
    let mut collectors = perf.collectors;
    for collector in &mut collectors {
        collector.start().unwrap();
    }
    let before = load.ops();
    std::thread::sleep(Duration::from_millis(4200));
    let mut run = empty_run();
    run.metrics.push(MetricValue {
        name: "will-it-scale.workload".into(),
        value: (load.ops() - before) as f64,
    });
    for collector in &mut collectors {
        collector
            .finish(&mut run)
            .unwrap_or_else(|err| panic!("{}: {err}", collector.name()));
    }
    drop(load);

    // Software events count everywhere, over the measured window only: not
    // during perf record's start-up nor during perf script afterwards.
    let task_clock_total = metric(&run, "perf-stat.total.task-clock").unwrap();
    let task_clock_rate = metric(&run, "perf-stat.ps.task-clock").unwrap();
    assert!(task_clock_rate > 0.0);
    let perf_seconds = task_clock_total / task_clock_rate;
    assert!(
        (perf_seconds - 4.2).abs() < 0.5,
        "perf stat counted {perf_seconds} s of a 4.2 s window"
    );
    assert!(metric(&run, "perf-stat.total.context-switches").is_some());
    assert!(metric(&run, "perf-stat.i.page-faults").is_some());
    let task_clock = run
        .series
        .iter()
        .find(|s| s.name == "perf-stat.i.task-clock")
        .expect("task-clock series");
    assert!(task_clock.points.len() >= 2, "{task_clock:?}");

    // Hardware events are either counted or unsupported, never both, never 0-by-default.
    for event in ["cycles", "instructions", "branch-misses", "cache-misses"] {
        let name = format!("perf-stat.ps.{event}");
        let counted = metric(&run, &name).is_some();
        let unsupported = run.unsupported.contains(&name);
        assert!(
            counted != unsupported,
            "{name}: counted {counted}, unsupported {unsupported}"
        );
    }
    let cycles_counted = metric(&run, "perf-stat.ps.cycles").is_some();
    assert_eq!(
        run.profile_event.as_deref(),
        Some(if cycles_counted {
            "cycles"
        } else {
            "cpu-clock"
        })
    );
    if !cycles_counted {
        assert!(
            run.unsupported
                .contains(&"perf-stat.overall.ipc".to_string())
        );
        assert!(
            run.unsupported
                .contains(&"perf-stat.overall.path-length".to_string())
        );
    }

    // The profile names the kernel's dup and close paths.
    let profile: Vec<&str> = run
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| n.starts_with("perf-profile."))
        .collect();
    assert!(profile.iter().any(|n| n.starts_with("perf-profile.self.")));
    if let Some(hidden) = kernel_symbols_warning() {
        println!("not checking kernel symbols: {hidden}");
        return;
    }
    assert!(
        metric(&run, "perf-profile.children.cycles-pp.alloc_fd").is_some(),
        "{profile:#?}"
    );
    assert!(
        profile
            .iter()
            .any(|n| n.starts_with("perf-profile.calltrace.cycles-pp.alloc_fd.")),
        "{profile:#?}"
    );
    assert!(
        profile
            .iter()
            .any(|n| n.starts_with("perf-profile.children.cycles-pp.") && n.contains("close")),
        "{profile:#?}"
    );
}

#[test]
fn perf_refusing_an_event_is_reported_with_its_own_words() {
    let Some(perf) = perf_or_skip() else { return };
    let _alone = one_at_a_time();
    let options = PerfOptions {
        stat_events: vec!["no-such-event".into()],
        ..PerfOptions::default()
    };
    let mut stat = PerfStat::new(perf, &options).unwrap();
    let err = stat.start().unwrap_err().to_string();
    assert!(err.contains("perf stat failed to start"), "{err}");
    assert!(err.contains("no-such-event"), "{err}");
    let err = stat.finish(&mut empty_run()).unwrap_err().to_string();
    assert!(err.contains("not started"), "{err}");
}

/// Runs the built `patchperf-runner` with `args`; returns its stdout.
fn runner(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_patchperf-runner"))
        .args(args)
        .output()
        .expect("patchperf-runner runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn read_run(path: &std::path::Path) -> RunResult {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bench_dup1_with_perf_stat_and_profile_stores_both_families() {
    let Some(_) = perf_or_skip() else { return };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let stdout = runner(&[
        "bench",
        "dup1",
        "-t",
        "2",
        "--warmup",
        "1",
        "--seconds",
        "3",
        "--perf",
        "stat,profile",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(stdout.contains("perf-stat.ps.task-clock"), "{stdout}");
    assert!(stdout.contains("perf-profile sampled on: "), "{stdout}");
    let run = read_run(&json);
    assert!(run.metric("perf-stat.i.context-switches").is_some());
    assert!(run.profile_event.is_some());
    assert!(
        run.metrics
            .iter()
            .any(|m| m.name.starts_with("perf-profile.children."))
    );
    if kernel_symbols_warning().is_none() {
        assert!(
            run.metric("perf-profile.children.cycles-pp.alloc_fd")
                .is_some(),
            "{stdout}"
        );
    }
    assert!(perf_failures(&run).is_empty(), "{:?}", run.warnings);
}

#[test]
fn the_guest_driver_collects_perf_when_the_request_asks_for_it() {
    let Some(_) = perf_or_skip() else { return };
    let _alone = one_at_a_time();
    let out = tempfile::tempdir().unwrap();
    let request = GuestRequest {
        measurement: MeasurementMode::Host,
        params: WorkloadParams {
            mode: TaskMode::Process,
            nr_task: vec![NrTask::Count(1)],
            seconds: 2,
            warmup_seconds: 1,
            perf_stat: true,
            perf_profile: true,
        },
        runs: vec![GuestRun {
            workload: "dup1".into(),
            nr_task: NrTask::Count(1),
        }],
        syscall_paths: true,
    };
    std::fs::write(
        out.path().join("request.json"),
        serde_json::to_string(&request).unwrap(),
    )
    .unwrap();
    runner(&["guest", "--out-dir", out.path().to_str().unwrap()]);
    let run = read_run(&out.path().join("run-000.json"));
    assert!(run.metric("perf-stat.ps.task-clock").is_some(), "{run:?}");
    assert!(
        run.metrics
            .iter()
            .any(|m| m.name.starts_with("perf-profile.self."))
    );
    assert!(perf_failures(&run).is_empty(), "{:?}", run.warnings);
    // The functions dup1's own calls ran through, for the workload map:
    // its two entry points and what they call, not perf's own work.
    let paths: SyscallPaths =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("paths-000.json")).unwrap())
            .unwrap();
    assert_eq!(paths.workload, "dup1");
    assert!(
        paths.through > 0 && paths.through <= paths.samples,
        "{paths:?}"
    );
    // Since 6.9 the small `__x64_sys_*` wrappers may be inlined into the
    // dispatcher `x64_sys_call`.
    assert!(paths.functions.contains_key("do_syscall_64"), "{paths:?}");
    assert!(
        ["__x64_sys_dup", "x64_sys_call"]
            .iter()
            .any(|f| paths.functions.contains_key(*f)),
        "{paths:?}"
    );
    // perf writes its data with write(2) all the while; dup1 never does.
    assert!(!paths.functions.contains_key("ksys_write"), "{paths:?}");
}
