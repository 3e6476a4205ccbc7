//! The perf stat collector: `perf stat -a -x, -I <ms> -e <events> -o <file>`
//! from the first measured second to the last, stopped with SIGINT.

use std::time::Duration;

use patchperf_common::metric::WIS_WORKLOAD;
use patchperf_common::run::RunResult;
use tempfile::TempDir;

use super::metrics::{derive, window_warning};
use super::parse::parse_intervals;
use crate::Error;
use crate::error::PerfError;
use crate::harness::Collector;
use crate::perf::PerfOptions;
use crate::perf::env::Perf;
use crate::perf::exec::{self, Lifecycle};

/// How long perf may take to start counting (it opens counters on every
/// CPU and lists the running tasks first).
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long perf stat may take to print its last interval after SIGINT.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// Counts [`PerfOptions::stat_events`] system-wide during the measured seconds.
#[derive(Debug)]
pub struct PerfStat {
    perf: Perf,
    events: Vec<String>,
    interval_ms: u32,
    dir: TempDir,
    lifecycle: Lifecycle,
}

impl PerfStat {
    /// A perf stat collector; makes its scratch directory in
    /// [`PerfOptions::work_dir`].
    pub fn new(perf: Perf, options: &PerfOptions) -> Result<Self, PerfError> {
        if options.stat_events.is_empty() {
            return Err(PerfError::Options(
                "perf stat needs at least one event".into(),
            ));
        }
        if let Some(event) = options.stat_events.iter().find(|e| e.contains(',')) {
            // perf's `-x,` output separates fields with commas and does not
            // quote them: such an event name could not be read back.
            return Err(PerfError::Options(format!(
                "perf stat event `{event}` contains a comma; name it without one"
            )));
        }
        if options.interval_ms < 10 {
            // perf refuses intervals under 10 ms.
            return Err(PerfError::Options(format!(
                "perf stat interval {} ms is below perf's 10 ms minimum",
                options.interval_ms
            )));
        }
        Ok(Self {
            perf,
            events: options.stat_events.clone(),
            interval_ms: options.interval_ms,
            dir: options.scratch_dir("stat")?,
            lifecycle: Lifecycle::new("perf stat"),
        })
    }

    fn csv_path(&self) -> std::path::PathBuf {
        self.dir.path().join("stat.csv")
    }
}

impl Collector for PerfStat {
    fn name(&self) -> &str {
        "perf-stat"
    }

    fn start(&mut self) -> Result<(), Error> {
        Ok(PerfStat::start(self)?)
    }

    fn finish(&mut self, result: &mut RunResult) -> Result<(), Error> {
        self.stop()?;
        Ok(self.collect(result)?)
    }
}

impl PerfStat {
    /// Starts perf stat counting system-wide; returns once it counts.
    pub fn start(&mut self) -> Result<(), PerfError> {
        let mut command = self.perf.command();
        command
            .args(["stat", "-a", "-x,", "-I"])
            .arg(self.interval_ms.to_string())
            .arg("-e")
            .arg(self.events.join(","))
            .arg("-o")
            .arg(self.csv_path());
        self.lifecycle
            .start(command, self.dir.path(), "stat", START_LIMIT)
    }

    /// Stops perf stat with SIGINT (it prints its last, short interval);
    /// [`PerfStat::collect`] then reads what it wrote.
    pub fn stop(&mut self) -> Result<(), PerfError> {
        self.lifecycle.stop(STOP_LIMIT)
    }

    /// Reads the stopped perf stat's output and adds the `perf-stat.*`
    /// metrics, series, unsupported names and warnings to `result`.
    pub fn collect(&mut self, result: &mut RunResult) -> Result<(), PerfError> {
        self.lifecycle.take_stopped()?;
        let text = std::fs::read_to_string(self.csv_path())
            .map_err(|err| PerfError::io("cannot read perf stat's output", err))?;
        let intervals = parse_intervals(&text).map_err(|err| {
            PerfError::output(err, exec::tail(&self.dir.path().join("stat.stderr")))
        })?;
        let seconds = f64::from(result.seconds);
        let ops_per_second = result
            .metric(WIS_WORKLOAD)
            .filter(|_| seconds > 0.0)
            .map(|ops| ops / seconds);
        let stat = derive(
            &intervals,
            f64::from(self.interval_ms) / 1000.0,
            ops_per_second,
        );
        if let Some(last) = intervals.last() {
            result
                .warnings
                .extend(window_warning(last.end_seconds, seconds));
        }
        result.metrics.extend(stat.metrics);
        result.series.extend(stat.series);
        result.unsupported.extend(stat.unsupported);
        result.warnings.extend(stat.warnings);
        Ok(())
    }
}
