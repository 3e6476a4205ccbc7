//! `patchperf-runner bench`: runs one workload on the running kernel and
//! prints will-it-scale's per-second lines and the run's metrics.

use std::io::Write;

use patchperf_common::protocol::NrTask;
use patchperf_common::run::{RunResult, TaskMode};
use patchperf_common::workload::WORKLOADS;

use crate::Error;
use crate::cli::bench::{BenchArgs, ModeArg, PerfArg};
use patchperf_common::limits::MAX_NR_TASK_ASKED;

use crate::harness::{self, BenchConfig, Phase, Progress};
use crate::perf::{self, PerfOptions, PerfTool};

/// Runs `patchperf-runner bench`.
pub fn run(args: BenchArgs) -> Result<(), Error> {
    if args.list {
        print_list();
        return Ok(());
    }
    let workload = args.workload.clone().unwrap_or_default();
    let nr_tasks = parse_tasks(&args.tasks, harness::online_cpus())?;
    let configs: Vec<BenchConfig> = nr_tasks
        .iter()
        .map(|&nr_task| BenchConfig {
            workload: workload.clone(),
            mode: match args.mode {
                ModeArg::Process => TaskMode::Process,
                ModeArg::Thread => TaskMode::Thread,
            },
            nr_task,
            seconds: args.seconds,
            warmup: args.warmup,
            scratch: args.scratch.clone(),
            affinity: !args.no_affinity,
            ..BenchConfig::new(workload.clone(), nr_task)
        })
        .collect();
    for config in &configs {
        config.validate()?;
    }
    if let Some(dir) = &args.scratch {
        harness::check_scratch_dir(dir)?;
    }
    if let Some(json) = &args.json {
        check_writable(json)?;
    }
    harness::interrupt::install().map_err(|e| Error::io("installing the SIGINT handler", e))?;

    let perf_tools: Vec<PerfTool> = args
        .perf
        .iter()
        .map(|tool| match tool {
            PerfArg::Stat => PerfTool::Stat,
            PerfArg::Profile => PerfTool::Profile,
        })
        .collect();
    let mut results = Vec::with_capacity(configs.len());
    for config in &configs {
        results.push(run_one(config, &perf_tools)?);
    }
    if let Some(json) = &args.json {
        write_json(json, &results)?;
    }
    Ok(())
}

fn print_list() {
    let width = WORKLOADS.iter().map(|w| w.name.len()).max().unwrap_or(0);
    for w in WORKLOADS {
        println!("{:width$}  {}", w.name, w.description);
    }
}

/// Reads `-t`: `N`, `P%` or a comma list of those, resolved against the
/// online CPUs and checked against [`MAX_NR_TASK_ASKED`].
fn parse_tasks(spec: &str, nr_cpu: u32) -> Result<Vec<u32>, Error> {
    spec.split(',')
        .map(|part| {
            let nr: NrTask = part
                .parse()
                .map_err(|e| Error::Usage(format!("-t {spec}: {e}")))?;
            let n = nr.resolve(nr_cpu);
            if n > MAX_NR_TASK_ASKED {
                return Err(Error::Usage(format!(
                    "-t {spec}: {n} tasks is more than the {MAX_NR_TASK_ASKED} allowed"
                )));
            }
            Ok(n)
        })
        .collect()
}

/// Fails early (before minutes of measuring) when --json cannot be written.
fn check_writable(path: &std::path::Path) -> Result<(), Error> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| Error::Usage(format!("--json {}: cannot write: {e}", path.display())))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn run_one(config: &BenchConfig, perf_tools: &[PerfTool]) -> Result<RunResult, Error> {
    let description =
        patchperf_common::workload::find(&config.workload).map_or("", |w| w.description);
    println!("testcase:{}: {description}", config.workload);
    println!(
        "tasks:{} mode:{} warmup:{}s seconds:{}s affinity:{}",
        config.nr_task,
        config.mode.as_str(),
        config.warmup,
        config.seconds,
        if config.affinity { "on" } else { "off" }
    );
    let perf = perf::setup(perf_tools, &PerfOptions::default());
    for warning in &perf.warnings {
        println!("warning: {warning}");
    }
    let mut collectors = perf.collectors;
    let mut phase = None;
    let mut result =
        harness::run_observed(config, &mut collectors, &mut |progress| match progress {
            Progress::Scratch { path, kind, tmpfs } => {
                println!(
                    "scratch:{} ({}{})",
                    path.display(),
                    kind.describe(),
                    if *tmpfs { "" } else { ", not tmpfs" }
                );
            }
            Progress::Second { phase: p, sample } => {
                if phase != Some(*p) {
                    phase = Some(*p);
                    println!(
                        "{}",
                        match p {
                            Phase::Warmup => "warmup",
                            Phase::Measurement => "measurement",
                        }
                    );
                }
                println!(
                    "min:{} max:{} total:{}",
                    sample.min, sample.max, sample.total
                );
                let _ = std::io::stdout().flush();
            }
        })?;
    result.warnings.splice(0..0, perf.warnings);
    print_summary(&result);
    Ok(result)
}

/// A system-wide profile has hundreds of entries; the terminal shows the
/// ones a reader acts on.
const PRINTED_PROFILE_PERCENT: f64 = 1.0;

fn print_summary(result: &RunResult) {
    if result.seconds > 0 {
        let total: u64 = result.samples.iter().map(|s| s.total).sum();
        println!("average:{}", total / u64::from(result.seconds));
    }
    let mut small_profile_entries = 0;
    for m in &result.metrics {
        if m.name.starts_with("perf-profile.") && m.value < PRINTED_PROFILE_PERCENT {
            small_profile_entries += 1;
            continue;
        }
        println!("{:>16}  {}", format_value(m.value), m.name);
    }
    if small_profile_entries > 0 {
        println!(
            "({small_profile_entries} perf-profile entries under {PRINTED_PROFILE_PERCENT}% \
             not shown; --json has them all)"
        );
    }
    if let Some(event) = &result.profile_event {
        println!("perf-profile sampled on: {event}");
    }
    for name in &result.unsupported {
        println!("{:>16}  {name}", "unsupported");
    }
    for w in &result.warnings {
        println!("warning: {w}");
    }
}

/// Integers as integers, others with two decimals.
fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// One run: a RunResult object; several: an array of them in -t order.
fn write_json(path: &std::path::Path, results: &[RunResult]) -> Result<(), Error> {
    let text = if let [one] = results {
        serde_json::to_string_pretty(one)
    } else {
        serde_json::to_string_pretty(results)
    }
    .map_err(|e| Error::io("encoding JSON", std::io::Error::other(e)))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_counts_are_numbers_percentages_or_lists() {
        assert_eq!(parse_tasks("4", 8).unwrap(), [4]);
        assert_eq!(parse_tasks("100%", 8).unwrap(), [8]);
        assert_eq!(parse_tasks("50%", 2).unwrap(), [1]);
        assert_eq!(parse_tasks("1,2,100%", 16).unwrap(), [1, 2, 16]);
    }

    #[test]
    fn bad_task_counts_are_usage_errors() {
        for bad in ["0", "x", "1,,2", "4097", "0%", "150%"] {
            let err = parse_tasks(bad, 4).unwrap_err();
            assert!(matches!(err, Error::Usage(_)), "{bad}: {err}");
        }
    }

    #[test]
    fn values_print_as_0day_does() {
        assert_eq!(format_value(3436082.0), "3436082");
        assert_eq!(format_value(1.5), "1.50");
    }
}
