//! perf stat and perf profile as one collector, so that each perf's
//! start-up and post-processing stay out of the other's window.
//!
//! Order matters because perf costs CPU time: perf record's start-up (ring
//! buffers on every CPU, the list of running tasks) and above all perf
//! script afterwards (seconds of symbol resolution) would otherwise be
//! counted by a perf stat still running, and land in its context switches,
//! page faults and task-clock. So: perf record starts first and perf stat
//! second (each start returns once that perf counts, and the measured
//! seconds begin after both); at the end perf stat stops first, then perf
//! record, and only then are their outputs read.

use patchperf_common::run::RunResult;

use super::{PerfProfile, PerfStat};
use crate::Error;
use crate::error::PerfError;
use crate::harness::Collector;

/// The perf collectors of one run, driven together.
#[derive(Debug, Default)]
pub struct PerfSession {
    stat: Option<PerfStat>,
    profile: Option<PerfProfile>,
    /// Failures of one part while the other went on, for the run's warnings.
    failures: Vec<String>,
}

impl PerfSession {
    /// A session running whichever of the two collectors are given.
    pub fn new(stat: Option<PerfStat>, profile: Option<PerfProfile>) -> Self {
        Self {
            stat,
            profile,
            failures: Vec::new(),
        }
    }

    /// Whether the session has anything to run.
    pub fn is_empty(&self) -> bool {
        self.stat.is_none() && self.profile.is_none()
    }
}

impl Collector for PerfSession {
    fn name(&self) -> &str {
        "perf"
    }

    fn start(&mut self) -> Result<(), Error> {
        if let Some(profile) = &mut self.profile {
            if let Err(err) = profile.start() {
                self.failures
                    .push(format!("perf-profile: could not start: {err}"));
                self.profile = None;
            }
        }
        if let Some(stat) = &mut self.stat {
            if let Err(err) = stat.start() {
                self.failures
                    .push(format!("perf-stat: could not start: {err}"));
                self.stat = None;
            }
        }
        if self.is_empty() {
            // Nothing runs: the harness reports this and never calls finish.
            return Err(PerfError::NoneStarted(std::mem::take(&mut self.failures)).into());
        }
        Ok(())
    }

    fn finish(&mut self, result: &mut RunResult) -> Result<(), Error> {
        let mut failures = std::mem::take(&mut self.failures);
        let stat_stopped = self
            .stat
            .as_mut()
            .map(|stat| stat.stop().map_err(|err| format!("perf-stat: {err}")));
        let profile_stopped = self
            .profile
            .as_mut()
            .map(|profile| profile.stop().map_err(|err| format!("perf-profile: {err}")));
        match (stat_stopped, &mut self.stat) {
            (Some(Ok(())), Some(stat)) => {
                if let Err(err) = stat.collect(result) {
                    failures.push(format!("perf-stat: {err}"));
                }
            }
            (Some(Err(err)), _) => failures.push(err),
            _ => {}
        }
        match (profile_stopped, &mut self.profile) {
            (Some(Ok(())), Some(profile)) => {
                if let Err(err) = profile.collect(result) {
                    failures.push(format!("perf-profile: {err}"));
                }
            }
            (Some(Err(err)), _) => failures.push(err),
            _ => {}
        }
        result.warnings.extend(failures);
        Ok(())
    }
}
