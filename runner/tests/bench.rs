//! `bench` as a specification: every workload runs in both modes, the counts
//! are real, each workload issues the system call its name says (checked
//! with strace), collectors see the measured window, bad input exits 2 with
//! one line, and the scratch directory is gone after a run and after Ctrl-C.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use patchperf_common::run::{RunResult, TaskMode};
use patchperf_runner::Error;
use patchperf_runner::harness::{self, BenchConfig, Collector};

const BIN: &str = env!("CARGO_BIN_EXE_patchperf-runner");

fn short(workload: &str, mode: TaskMode, nr_task: u32) -> BenchConfig {
    BenchConfig {
        mode,
        seconds: 1,
        warmup: 0,
        ..BenchConfig::new(workload, nr_task)
    }
}

/// The invariants every will-it-scale run must hold.
fn assert_real_counts(r: &RunResult, seconds: usize) {
    let what = format!("{} {}×{}", r.workload, r.nr_task, r.mode.as_str());
    assert_eq!(r.samples.len(), seconds, "{what}: one sample per second");
    let scaling = format!("will-it-scale.{}.{}", r.nr_task, r.mode.plural());
    let series = r.series.iter().find(|s| s.name == scaling).expect("series");
    assert_eq!(series.points.len(), seconds, "{what}");
    assert_eq!(series.interval_seconds, 1.0);
    let mut total = 0;
    for (s, &point) in r.samples.iter().zip(&series.points) {
        assert!(s.total > 0, "{what}: no ops in a second");
        assert!(s.min <= s.max, "{what}: min {} > max {}", s.min, s.max);
        assert!(s.max <= s.total, "{what}");
        assert!(s.min * u64::from(r.nr_task) <= s.total, "{what}");
        assert_eq!(point, s.total as f64);
        total += s.total;
    }
    assert_eq!(
        r.metric("will-it-scale.workload"),
        Some(total as f64),
        "{what}"
    );
    let per_second = total as f64 / seconds as f64;
    assert_eq!(r.metric(&scaling), Some(per_second), "{what}");
    let per_task = format!("will-it-scale.per_{}_ops", r.mode.as_str());
    let got = r.metric(&per_task).expect("per-task metric");
    assert!(
        (got - per_second / f64::from(r.nr_task)).abs() < 1e-6,
        "{what}"
    );
}

fn every_mode_and_count(workload: &str) {
    for mode in [TaskMode::Process, TaskMode::Thread] {
        for nr_task in [1, 2] {
            let r = harness::run(&short(workload, mode, nr_task), &mut []).unwrap();
            assert_eq!(r.workload, workload);
            assert_eq!(
                (r.mode, r.nr_task, r.seconds, r.warmup_seconds),
                (mode, nr_task, 1, 0)
            );
            assert_real_counts(&r, 1);
        }
    }
}

/// One test per workload, so that they run side by side.
macro_rules! every_mode_and_count {
    ($($test:ident: $workload:literal,)*) => {$(
        #[test]
        fn $test() {
            every_mode_and_count($workload);
        }
    )*};
}

every_mode_and_count! {
    open1_runs_in_both_modes_with_one_and_two_tasks: "open1",
    open2_runs_in_both_modes_with_one_and_two_tasks: "open2",
    open3_runs_in_both_modes_with_one_and_two_tasks: "open3",
    open_enoent_runs_in_both_modes_with_one_and_two_tasks: "open-enoent",
    open_creat_runs_in_both_modes_with_one_and_two_tasks: "open-creat",
    dup1_runs_in_both_modes_with_one_and_two_tasks: "dup1",
    fstat_runs_in_both_modes_with_one_and_two_tasks: "fstat",
    fstatat_empty_runs_in_both_modes_with_one_and_two_tasks: "fstatat-empty",
    statx_empty_runs_in_both_modes_with_one_and_two_tasks: "statx-empty",
    poll1_runs_in_both_modes_with_one_and_two_tasks: "poll1",
    poll2_runs_in_both_modes_with_one_and_two_tasks: "poll2",
    pipe1_runs_in_both_modes_with_one_and_two_tasks: "pipe1",
    read1_runs_in_both_modes_with_one_and_two_tasks: "read1",
    read2_runs_in_both_modes_with_one_and_two_tasks: "read2",
    write1_runs_in_both_modes_with_one_and_two_tasks: "write1",
    pread1_runs_in_both_modes_with_one_and_two_tasks: "pread1",
    pwrite1_runs_in_both_modes_with_one_and_two_tasks: "pwrite1",
    lseek1_runs_in_both_modes_with_one_and_two_tasks: "lseek1",
    lseek2_runs_in_both_modes_with_one_and_two_tasks: "lseek2",
    unlink1_runs_in_both_modes_with_one_and_two_tasks: "unlink1",
    unlink2_runs_in_both_modes_with_one_and_two_tasks: "unlink2",
    lock1_runs_in_both_modes_with_one_and_two_tasks: "lock1",
    lock2_runs_in_both_modes_with_one_and_two_tasks: "lock2",
    eventfd1_runs_in_both_modes_with_one_and_two_tasks: "eventfd1",
    getppid1_runs_in_both_modes_with_one_and_two_tasks: "getppid1",
}

#[test]
fn the_tests_above_cover_every_workload() {
    let source = include_str!("bench.rs");
    for w in patchperf_common::workload::WORKLOADS {
        let line = format!(
            "_runs_in_both_modes_with_one_and_two_tasks: \"{}\",",
            w.name
        );
        assert!(source.contains(&line), "{} has no test above", w.name);
    }
}

#[test]
fn warmup_seconds_are_run_but_not_kept() {
    let config = BenchConfig {
        seconds: 2,
        warmup: 1,
        ..BenchConfig::new("dup1", 1)
    };
    let mut phases = Vec::new();
    let r = harness::run_observed(&config, &mut [], &mut |p| {
        if let harness::Progress::Second { phase, .. } = p {
            phases.push(*phase);
        }
    })
    .unwrap();
    use harness::Phase::{Measurement, Warmup};
    assert_eq!(phases, [Warmup, Measurement, Measurement]);
    assert_eq!(r.warmup_seconds, 1);
    assert_real_counts(&r, 2);
}

/// Records when it was called, and adds a metric computed from what the
/// harness already put in the result.
struct Recorder {
    log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    fail_start: bool,
    fail_finish: bool,
}

impl Collector for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn start(&mut self) -> Result<(), Error> {
        self.log.borrow_mut().push("start".into());
        if self.fail_start {
            return Err(Error::Bench("no such tool".into()));
        }
        Ok(())
    }

    fn finish(&mut self, result: &mut RunResult) -> Result<(), Error> {
        let ops = result
            .metric("will-it-scale.workload")
            .ok_or_else(|| Error::Bench("no workload metric".into()))?;
        self.log
            .borrow_mut()
            .push(format!("finish {}", result.samples.len()));
        if self.fail_finish {
            return Err(Error::Bench("output unreadable".into()));
        }
        result.metrics.push(patchperf_common::run::MetricValue {
            name: "recorder.ops".into(),
            value: ops,
        });
        Ok(())
    }
}

#[test]
fn collectors_watch_the_measured_seconds_and_their_errors_become_warnings() {
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let recorder = |fail_start, fail_finish| -> Box<dyn Collector> {
        Box::new(Recorder {
            log: log.clone(),
            fail_start,
            fail_finish,
        })
    };
    let mut collectors = vec![
        recorder(false, false),
        recorder(true, false),
        recorder(false, true),
    ];
    let mut second_seen_at_start = None;
    let config = BenchConfig {
        seconds: 1,
        warmup: 1,
        ..BenchConfig::new("fstat", 1)
    };
    let r = harness::run_observed(&config, &mut collectors, &mut |p| {
        if let harness::Progress::Second { phase, .. } = p {
            second_seen_at_start.get_or_insert((*phase, log.borrow().len()));
        }
    })
    .unwrap();
    // The warm-up second ended before any collector started.
    assert_eq!(second_seen_at_start, Some((harness::Phase::Warmup, 0)));
    assert_eq!(
        *log.borrow(),
        ["start", "start", "start", "finish 1", "finish 1"],
        "the collector that failed to start is not finished"
    );
    assert_eq!(r.metric("recorder.ops"), r.metric("will-it-scale.workload"));
    assert_eq!(
        r.warnings,
        [
            "recorder: could not start: no such tool",
            "recorder: output unreadable"
        ]
    );
    assert_real_counts(&r, 1);
}

#[test]
fn bad_configurations_are_usage_errors() {
    let cases = [
        BenchConfig::new("open4", 1),
        BenchConfig::new("open1", 0),
        BenchConfig::new("open1", patchperf_common::limits::MAX_NR_TASK_ASKED + 1),
        BenchConfig {
            seconds: 0,
            ..BenchConfig::new("open1", 1)
        },
        BenchConfig {
            scratch: Some(PathBuf::from("/proc/self")),
            ..BenchConfig::new("open1", 1)
        },
    ];
    for config in cases {
        let err = harness::run(&config, &mut []).unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{config:?}: {err}");
    }
}

// ---- the binary ----

fn bench_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("bench").args(args);
    cmd
}

fn run_bin(args: &[&str]) -> Output {
    bench_cmd(args).output().expect("runs the binary")
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_status_2() {
    let json_in_missing_dir = "/nonexistent-dir/out.json";
    let cases: &[(&[&str], &str)] = &[
        (&["open4"], "unknown workload \"open4\""),
        (&["open1", "-t", "0"], "at least 1"),
        (&["open1", "-t", "4097"], "more than the 4096 allowed"),
        (&["open1", "-t", "1,x"], "not a number"),
        (&["open1", "--seconds", "0"], "at least one measured second"),
        (
            &["open1", "--scratch", "/proc/self"],
            "scratch directory /proc/self",
        ),
        (
            &["open1", "--scratch", "/nonexistent-dir"],
            "scratch directory",
        ),
        (&["open1", "--json", json_in_missing_dir], "--json"),
    ];
    for (args, expected) in cases {
        let out = run_bin(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("patchperf-runner: "),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing ran");
    }
}

#[test]
fn list_names_every_workload_with_its_description() {
    let out = run_bin(&["--list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), patchperf_common::workload::WORKLOADS.len());
    assert_eq!(lines.len(), 25);
    assert!(lines[0].starts_with("open1 "), "{}", lines[0]);
    assert!(
        lines[21].starts_with("lock1 ") && lines[21].ends_with("(2 ops)"),
        "{}",
        lines[21]
    );
    assert!(
        lines[6].starts_with("fstat ")
            && lines[6].ends_with("the native fstat syscall (raw syscall, not libc)"),
        "{}",
        lines[6]
    );
}

/// The `scratch:` path the binary printed.
fn scratch_of(stdout: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("scratch:"))
        .expect("scratch line");
    PathBuf::from(line.split(" (").next().unwrap())
}

#[test]
fn prints_will_it_scale_lines_and_removes_its_scratch_directory() {
    let out = run_bin(&["dup1", "-t", "2", "--seconds", "2", "--warmup", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let warmup = lines.iter().position(|l| *l == "warmup").unwrap();
    let measurement = lines.iter().position(|l| *l == "measurement").unwrap();
    assert_eq!(measurement, warmup + 2, "{stdout}");
    for line in [
        lines[warmup + 1],
        lines[measurement + 1],
        lines[measurement + 2],
    ] {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 3, "{line}");
        assert!(
            fields[0].starts_with("min:") && fields[1].starts_with("max:"),
            "{line}"
        );
        assert!(fields[2].starts_with("total:"), "{line}");
    }
    assert!(
        stdout.contains("  will-it-scale.per_process_ops\n"),
        "{stdout}"
    );
    assert!(stdout.contains("  will-it-scale.workload\n"), "{stdout}");
    assert!(stdout.contains("  will-it-scale.2.processes\n"), "{stdout}");
    let scratch = scratch_of(&stdout);
    assert!(scratch.starts_with("/dev/shm") || scratch.starts_with(std::env::temp_dir()));
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}

#[test]
fn json_holds_one_run_or_an_array_of_runs_for_a_task_list() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let out = run_bin(&[
        "fstat",
        "--seconds",
        "1",
        "--warmup",
        "0",
        "--json",
        one.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: RunResult = serde_json::from_str(&std::fs::read_to_string(&one).unwrap()).unwrap();
    assert_eq!((run.workload.as_str(), run.nr_task), ("fstat", 1));
    assert_eq!(
        run.measurement,
        patchperf_common::run::MeasurementMode::Host
    );
    assert_real_counts(&run, 1);

    let list = dir.path().join("list.json");
    let out = run_bin(&[
        "fstat",
        "-t",
        "1,2",
        "--mode",
        "thread",
        "--seconds",
        "1",
        "--warmup",
        "0",
        "--json",
        list.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<RunResult> =
        serde_json::from_str(&std::fs::read_to_string(&list).unwrap()).unwrap();
    assert_eq!(runs.iter().map(|r| r.nr_task).collect::<Vec<_>>(), [1, 2]);
    for r in &runs {
        assert_eq!(r.mode, TaskMode::Thread);
        assert_real_counts(r, 1);
    }
}

/// Runs the binary until its first measured second is printed, then sends
/// `signal`; returns (exit status, stderr, scratch path, task pids).
fn interrupt_after_first_second(
    args: &[&str],
    signal: i32,
) -> (Option<i32>, String, PathBuf, Vec<i32>) {
    let mut child = bench_cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.starts_with("min:") {
            break;
        }
        line.clear();
    }
    let scratch = scratch_of(&seen);
    assert!(scratch.exists());
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let tasks: Vec<i32> = children
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    // SAFETY: sends a signal to the child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it stopped promptly"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        scratch,
        tasks,
    )
}

#[test]
fn ctrl_c_kills_the_tasks_and_removes_the_scratch_directory() {
    let (code, stderr, scratch, tasks) = interrupt_after_first_second(
        &["open1", "-t", "2", "--seconds", "60", "--warmup", "0"],
        libc::SIGINT,
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(stderr.trim(), "patchperf-runner: interrupted");
    assert_eq!(tasks.len(), 2, "two forked tasks were running");
    for task in tasks {
        assert!(
            !Path::new(&format!("/proc/{task}")).exists(),
            "task {task} still there"
        );
    }
    assert!(!scratch.exists(), "{} left behind", scratch.display());
}

#[test]
fn sigterm_stops_a_threads_run_and_empties_the_given_scratch_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, scratch, _) = interrupt_after_first_second(
        &[
            "open2",
            "-t",
            "2",
            "--mode",
            "thread",
            "--seconds",
            "60",
            "--warmup",
            "0",
            "--scratch",
            dir.path().to_str().unwrap(),
        ],
        libc::SIGTERM,
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(scratch.starts_with(dir.path()));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "scratch left behind"
    );
}

// ---- what the kernel sees, checked with strace ----

fn strace_available() -> bool {
    let ok = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: strace is not installed");
    }
    ok
}

/// `strace -f -c` of a two-second, one-task run: calls per system call.
fn syscall_counts(workload: &str) -> std::collections::HashMap<String, u64> {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("strace.txt");
    // Without cargo's LD_LIBRARY_PATH, whose directories the dynamic loader
    // would search with dozens of openat/newfstatat calls of its own.
    let out = Command::new("strace")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-f", "-c", "-o"])
        .arg(&summary)
        .arg(BIN)
        .args(["bench", workload, "--seconds", "2", "--warmup", "0"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    strace_calls(&summary)
}

/// Calls per system call in a `strace -c` summary file.
fn strace_calls(summary: &Path) -> std::collections::HashMap<String, u64> {
    // Lines of the table: "% time seconds usecs/call calls [errors] syscall".
    std::fs::read_to_string(summary)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let calls = f.get(3)?.parse().ok()?;
            let name = f.last()?;
            (*name != "total").then(|| (name.to_string(), calls))
        })
        .collect()
}

#[test]
fn fstat_fstatat_empty_and_statx_empty_issue_different_system_calls() {
    if !strace_available() {
        return;
    }
    let stats = ["fstat", "newfstatat", "statx"];
    for (workload, syscall) in [
        ("fstat", "fstat"),
        ("fstatat-empty", "newfstatat"),
        ("statx-empty", "statx"),
    ] {
        // Traced, the loop manages a few hundred calls a second on a loaded
        // machine; the runner itself makes a handful of stat calls while
        // starting and cleaning up (the dynamic loader, remove_dir_all).
        let counts = syscall_counts(workload);
        let hot = counts.get(syscall).copied().unwrap_or(0);
        assert!(
            hot >= 100,
            "{workload}: only {hot} {syscall} calls: {counts:?}"
        );
        for other in stats.iter().filter(|s| **s != syscall) {
            let n = counts.get(*other).copied().unwrap_or(0);
            assert!(
                n <= 20,
                "{workload}: {n} {other} calls beside {hot} {syscall}: {counts:?}"
            );
        }
    }
}

/// `strace -f -c` of a two-second, one-task run with its result: calls
/// per system call and the operations the run counted.
fn traced_run(workload: &str) -> (std::collections::HashMap<String, u64>, f64) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("strace.txt");
    let json = dir.path().join("run.json");
    let out = Command::new("strace")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-f", "-c", "-o"])
        .arg(&summary)
        .arg(BIN)
        .args([
            "bench",
            workload,
            "--seconds",
            "2",
            "--warmup",
            "0",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{workload}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: RunResult = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ops = run.metric("will-it-scale.workload").unwrap();
    (strace_calls(&summary), ops)
}

/// Every fs/ workload issues each system call its catalogue entry names
/// once per counted operation, as will-it-scale counts them (lock1 and
/// lock2: two fcntl calls a loop, two operations), give or take the calls
/// of the loop under way when the run stops and the runner's own few.
#[test]
fn each_fs_workload_issues_its_system_calls_once_per_operation() {
    if !strace_available() {
        return;
    }
    let fs_workloads = patchperf_common::workload::WORKLOADS
        .iter()
        .skip_while(|w| w.name != "poll1");
    let mut checked = 0;
    for w in fs_workloads {
        let (calls, ops) = traced_run(w.name);
        assert!(ops >= 100.0, "{}: only {ops} operations: {calls:?}", w.name);
        for syscall in w.syscalls {
            let n = calls.get(syscall.name).copied().unwrap_or(0) as f64;
            assert!(
                n >= ops && n <= ops * 1.05 + 100.0,
                "{}: {n} {} calls for {ops} operations: {calls:?}",
                w.name,
                syscall.name
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 16);
}

#[test]
fn dup1_issues_dup_and_close() {
    if !strace_available() {
        return;
    }
    let counts = syscall_counts("dup1");
    let dup = counts.get("dup").copied().unwrap_or(0);
    let close = counts.get("close").copied().unwrap_or(0);
    assert!(dup >= 100, "{counts:?}");
    assert!(close >= dup && close <= dup + 100, "{counts:?}");
}

#[test]
fn open_enoent_fails_with_enoent_every_time() {
    if !strace_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat", "-o"])
        .arg(&trace)
        .arg(BIN)
        .args(["bench", "open-enoent", "--seconds", "1", "--warmup", "0"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/nonexistent\", O_RDONLY)"))
        .collect();
    // strace slows every call a hundredfold and CI machines are loaded: a
    // few dozen traced calls are plenty to show what each one returned.
    assert!(calls.len() >= 20, "only {} opens", calls.len());
    // The call under way when the task is SIGKILLed at the end of the run
    // shows as `<unfinished ...>`, `= ?` or even a garbled errno: only the
    // last call may be one of those; every other one returned ENOENT.
    let not_enoent: Vec<&&str> = calls[..calls.len() - 1]
        .iter()
        .filter(|l| !l.ends_with("= -1 ENOENT (No such file or directory)"))
        .filter(|l| !l.ends_with("<unfinished ...>"))
        .collect();
    assert!(
        not_enoent.is_empty(),
        "opens that did not fail with ENOENT: {not_enoent:?}"
    );
}
