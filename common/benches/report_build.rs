//! How long building a comparison report takes: `cargo bench -p
//! patchperf-common [-- FILTER]`. Builds reports from synthetic runs (see
//! `tests/synthetic`) of 3, 5 and 10 runs a side, ~250 metrics a run, with
//! continuous values (no rank ties) and with values rounded as the
//! collectors print them (ties, constant metrics, missing profile entries).
//! "large" is the large comparison: 2 workloads × 3 nr_task groups
//! of 10 runs a side, ~29k values.
//!
//! Every report of a scenario is built from different numbers (its own
//! seed), so nothing keyed by the values can be reused between builds; what
//! depends only on run counts may be. Prints wall and CPU time per report
//! and per metric.

#[path = "../tests/synthetic/mod.rs"]
mod synthetic;

use std::time::{Duration, Instant};

use patchperf_common::run::RunResult;
use synthetic::{Shape, build, runs};

/// A report's groups: (base, patched) runs of each (workload, nr_task).
type Report = Vec<(Vec<RunResult>, Vec<RunResult>)>;

struct Scenario {
    name: &'static str,
    runs: usize,
    groups: u32,
    ties: bool,
}

const SCENARIOS: [Scenario; 8] = [
    Scenario {
        name: "3-a-side",
        runs: 3,
        groups: 1,
        ties: false,
    },
    Scenario {
        name: "3-a-side-ties",
        runs: 3,
        groups: 1,
        ties: true,
    },
    Scenario {
        name: "typical-5-a-side",
        runs: 5,
        groups: 1,
        ties: false,
    },
    Scenario {
        name: "typical-5-a-side-ties",
        runs: 5,
        groups: 1,
        ties: true,
    },
    Scenario {
        name: "10-a-side",
        runs: 10,
        groups: 1,
        ties: false,
    },
    Scenario {
        name: "10-a-side-ties",
        runs: 10,
        groups: 1,
        ties: true,
    },
    Scenario {
        name: "large-6x10-a-side",
        runs: 10,
        groups: 6,
        ties: false,
    },
    Scenario {
        name: "large-6x10-a-side-ties",
        runs: 10,
        groups: 6,
        ties: true,
    },
];

/// perf-profile entries per run: with 50 other metrics, ~250 a run.
const PROFILE_ENTRIES: usize = 200;
/// Time each scenario this long (after one warm-up build).
const BUDGET: Duration = Duration::from_millis(1500);

fn report(s: &Scenario, seed: u64) -> Report {
    (0..s.groups)
        .map(|g| {
            let shape = Shape {
                runs: s.runs,
                profile_entries: PROFILE_ENTRIES,
                ties: s.ties,
                seed: seed * 1000 + u64::from(g),
            };
            runs(&shape, 1 << g)
        })
        .collect()
}

/// CPU time of this thread: `/proc/thread-self/schedstat`'s first field
/// (nanoseconds on a CPU).
fn cpu_time() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

fn build_report(r: &Report) -> usize {
    r.iter()
        .map(|(b, p)| std::hint::black_box(build(b, p)).metrics.len())
        .sum()
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    println!(
        "{:<24} {:>7} {:>8} {:>6} {:>11} {:>11} {:>11} {:>10}",
        "scenario", "metrics", "values", "builds", "wall ms p50", "wall ms", "CPU ms", "µs/metric"
    );
    for s in &SCENARIOS {
        if !filter.is_empty() && !filter.iter().any(|f| s.name.contains(f.as_str())) {
            continue;
        }
        let warm = report(s, 1);
        build_report(&warm);
        let values: usize = warm
            .iter()
            .flat_map(|(b, p)| b.iter().chain(p))
            .map(|r| r.metrics.len())
            .sum();
        // Estimate the builds the budget allows, then make their inputs first
        // so only building is timed.
        let once = Instant::now();
        build_report(&report(s, 2));
        let per = once.elapsed().max(Duration::from_micros(1));
        let n = (BUDGET.as_nanos() / per.as_nanos()).clamp(5, 2000) as u64;
        let inputs: Vec<Report> = (0..n).map(|i| report(s, 10 + i)).collect();

        let mut walls = Vec::with_capacity(inputs.len());
        let mut metrics = 0;
        let cpu0 = cpu_time();
        let wall0 = Instant::now();
        for r in &inputs {
            let t = Instant::now();
            metrics += build_report(r);
            walls.push(t.elapsed());
        }
        let wall = wall0.elapsed();
        let cpu = cpu_time() - cpu0;
        walls.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let per_report = metrics as f64 / n as f64;
        println!(
            "{:<24} {:>7.0} {:>8} {:>6} {:>11.3} {:>11.3} {:>11.3} {:>10.2}",
            s.name,
            per_report,
            values,
            n,
            ms(walls[walls.len() / 2]),
            ms(wall) / n as f64,
            ms(cpu) / n as f64,
            cpu.as_secs_f64() * 1e6 / metrics as f64,
        );
    }
}
