//! The perf profile collector: `perf record -a -g` over the measured seconds
//! (stopped with SIGINT), then `perf script` on the same machine, so kernel
//! symbols come from the running kernel's own `/proc/kallsyms` and user
//! symbols from the binaries the samples hit.

use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

use patchperf_common::run::RunResult;
use tempfile::TempDir;

use super::metrics::Profile;
use super::parse::{ScriptParser, lost_samples_warning};
use super::paths::SyscallPaths;
use crate::Error;
use crate::error::PerfError;
use crate::harness::Collector;
use crate::perf::env::{Perf, kernel_symbols_warning};
use crate::perf::exec::{self, Lifecycle};
use crate::perf::{PathsRequest, PerfOptions};

/// How long perf may take to start counting (it opens counters on every
/// CPU and lists the running tasks first).
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long perf record may take to write its data after SIGINT.
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// How long perf script may take to resolve and print the samples.
const SCRIPT_LIMIT: Duration = Duration::from_secs(600);

/// The event a profile samples on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileEvent {
    /// CPU cycles from the PMU (bare metal, VMs with a virtual PMU).
    Cycles,
    /// The `cpu-clock` software timer, where no PMU counts cycles.
    CpuClock,
}

impl ProfileEvent {
    /// The perf event name, also stored as `RunResult::profile_event`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileEvent::Cycles => "cycles",
            ProfileEvent::CpuClock => "cpu-clock",
        }
    }
}

/// Samples the whole system with call stacks during the measured seconds.
#[derive(Debug)]
pub struct PerfProfile {
    perf: Perf,
    event: ProfileEvent,
    frequency: u32,
    dir: TempDir,
    lifecycle: Lifecycle,
    warnings: Vec<String>,
    paths: Option<PathsRequest>,
}

impl PerfProfile {
    /// A profile collector; probes the PMU (`perf stat -e cycles true`) to
    /// sample `cycles` where it counts and `cpu-clock` where it does not.
    pub fn new(perf: Perf, options: &PerfOptions) -> Result<Self, PerfError> {
        let dir = options.scratch_dir("profile")?;
        let event = if perf.counts_cycles(dir.path())? {
            ProfileEvent::Cycles
        } else {
            ProfileEvent::CpuClock
        };
        Ok(Self::with_event(perf, options, event, dir))
    }

    /// A profile collector sampling `event` without probing.
    pub fn with_event(
        perf: Perf,
        options: &PerfOptions,
        event: ProfileEvent,
        dir: TempDir,
    ) -> Self {
        Self {
            perf,
            event,
            frequency: options.profile_frequency,
            dir,
            lifecycle: Lifecycle::new("perf record"),
            warnings: kernel_symbols_warning().into_iter().collect(),
            paths: options.syscall_paths.clone(),
        }
    }

    /// The event this collector samples.
    pub fn event(&self) -> ProfileEvent {
        self.event
    }

    fn data_path(&self) -> PathBuf {
        self.dir.path().join("perf.data")
    }

    /// Runs perf script over the recording and folds its samples into a
    /// profile (and the syscall paths, where asked); also says whether
    /// perf reported lost samples.
    fn read_profile(&self) -> Result<(Profile, Option<SyscallPaths>, Option<String>), PerfError> {
        let script = self.dir.path().join("script.txt");
        let stderr = self.dir.path().join("script.stderr");
        let mut command = self.perf.command();
        command.args(["script", "-i"]).arg(self.data_path()).args([
            "-F",
            "comm,tid,period,ip,sym,dso",
            "--no-inline",
        ]);
        exec::run(command, "perf script", &script, &stderr, SCRIPT_LIMIT)?;
        let file = std::fs::File::open(&script)
            .map_err(|err| PerfError::io("cannot read perf script's output", err))?;
        let mut parser = ScriptParser::new();
        let mut profile = Profile::new();
        let mut paths = self
            .paths
            .as_ref()
            .map(|p| SyscallPaths::new(p.workload.clone()));
        let mut add = |sample: &super::parse::Sample| {
            profile.add(sample);
            if let Some(paths) = &mut paths {
                paths.add(sample);
            }
        };
        for line in std::io::BufReader::new(file).lines() {
            let line =
                line.map_err(|err| PerfError::io("cannot read perf script's output", err))?;
            let pushed = parser
                .push_line(&line)
                .map_err(|err| PerfError::output(err, String::new()))?;
            if let Some(sample) = pushed {
                add(&sample);
            }
        }
        if let Some(sample) = parser.finish() {
            add(&sample);
        }
        let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
        Ok((profile, paths, lost_samples_warning(&stderr)))
    }
}

impl Collector for PerfProfile {
    fn name(&self) -> &str {
        "perf-profile"
    }

    fn start(&mut self) -> Result<(), Error> {
        Ok(PerfProfile::start(self)?)
    }

    fn finish(&mut self, result: &mut RunResult) -> Result<(), Error> {
        self.stop()?;
        Ok(self.collect(result)?)
    }
}

impl PerfProfile {
    /// Starts perf record sampling system-wide; returns once it records.
    pub fn start(&mut self) -> Result<(), PerfError> {
        let mut command = self.perf.command();
        command
            .args(["record", "-a", "-g", "-e", self.event.as_str(), "-F"])
            .arg(self.frequency.to_string())
            // No build-id collection or cache: perf script runs right after,
            // on the same files, and a guest's root may be read-only.
            .args(["--no-buildid", "--no-buildid-cache", "-o"])
            .arg(self.data_path());
        self.lifecycle
            .start(command, self.dir.path(), "record", START_LIMIT)
    }

    /// Stops perf record with SIGINT (it writes out its buffers);
    /// [`PerfProfile::collect`] then reads the samples.
    pub fn stop(&mut self) -> Result<(), PerfError> {
        self.lifecycle.stop(STOP_LIMIT)
    }

    /// Runs perf script over the stopped recording and adds the
    /// `perf-profile.*` metrics, the sampled event and warnings to `result`.
    pub fn collect(&mut self, result: &mut RunResult) -> Result<(), PerfError> {
        self.lifecycle.take_stopped()?;
        let (profile, paths, lost) = self.read_profile()?;
        if let (Some(paths), Some(request)) = (paths, &self.paths) {
            let text = serde_json::to_string_pretty(&paths)
                .map_err(|err| PerfError::io("cannot write the syscall paths", err.into()))?;
            std::fs::write(&request.out, text).map_err(|err| {
                PerfError::io(format!("cannot write {}", request.out.display()), err)
            })?;
        }
        result.warnings.append(&mut self.warnings);
        result.warnings.extend(lost);
        if profile.samples() == 0 {
            result
                .warnings
                .push("perf record took no samples: no perf-profile metrics".into());
            return Ok(());
        }
        result.profile_event = Some(self.event.as_str().to_string());
        result.metrics.extend(profile.metrics());
        Ok(())
    }
}
