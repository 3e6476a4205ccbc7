//! The harness's driver: sets a workload up, starts its tasks together, reads their
//! counters once a second (warm-up seconds first, then the measured ones,
//! with the collectors watching those), and stops everything again. It
//! knows nothing about what the tasks do.

use std::path::Path;
use std::time::{Duration, Instant};

use patchperf_common::run::{MeasurementMode, RunResult, SecondSample, TaskMode};

use super::collector::Collector;
use super::interrupt;
use super::shared::{SharedArea, TaskState};
use super::summary::{self, RunShape};
use super::tasks::{self, Gate, Processes, TaskPlan};
use super::workload::Workload;
use super::{Phase, Progress};
use crate::Error;

/// How long tasks may take to get through their set-up.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// One run, resolved and checked: what the harness needs.
#[derive(Debug)]
pub struct Run<'a> {
    /// Processes or threads.
    pub mode: TaskMode,
    /// Number of tasks.
    pub nr_task: u32,
    /// Measured seconds.
    pub seconds: u32,
    /// Warm-up seconds.
    pub warmup: u32,
    /// Recorded in the result.
    pub measurement: MeasurementMode,
    /// Where the workload makes its files.
    pub scratch: &'a Path,
    /// CPUs to pin task i to (entry i mod len), or none.
    pub cpus: Option<&'a [usize]>,
}

/// The observer the caller passes to follow a run.
pub type Observer<'o> = dyn FnMut(&Progress<'_>) + 'o;

/// Runs workload `W` as `run` says.
pub fn run<W: Workload>(
    run: &Run<'_>,
    collectors: &mut [Box<dyn Collector>],
    observer: &mut Observer<'_>,
) -> Result<RunResult, Error> {
    // Threads share one file table; a forked task has its own, and
    // inherits the limit.
    tasks::raise_nofile_limit(match run.mode {
        TaskMode::Thread => u64::from(run.nr_task) * W::FDS_PER_TASK,
        TaskMode::Process => W::FDS_PER_TASK,
    });
    let workload = W::setup(run.scratch, run.nr_task).map_err(|e| {
        Error::io(
            format!("{}: setting up in {}", W::NAME, run.scratch.display()),
            e,
        )
    })?;
    let result = start_and_drive(&workload, run, collectors, observer);
    let cleaned = workload.cleanup();
    let mut result = result?;
    if let Err(e) = cleaned {
        result.warnings.push(format!("{}: clean-up: {e}", W::NAME));
    }
    Ok(result)
}

fn start_and_drive<W: Workload>(
    workload: &W,
    run: &Run<'_>,
    collectors: &mut [Box<dyn Collector>],
    observer: &mut Observer<'_>,
) -> Result<RunResult, Error> {
    let nr = run.nr_task as usize;
    let area = SharedArea::new(nr).map_err(|e| Error::io("mapping the task counters", e))?;
    let gate = Gate::new().map_err(|e| Error::io("making the start gate", e))?;
    let stop = &area.flags().stop;
    let plans: Vec<TaskPlan<'_>> = (0..nr)
        .map(|index| TaskPlan {
            index,
            slot: area.slot(index),
            gate: gate.wait_fd(),
            cpu: run
                .cpus
                .filter(|c| !c.is_empty())
                .map(|c| c[index % c.len()]),
            stop,
        })
        .collect();
    let shape = RunShape {
        workload: W::NAME.to_string(),
        mode: run.mode,
        nr_task: run.nr_task,
        warmup_seconds: run.warmup,
        measurement: run.measurement,
    };
    let driver = Driver {
        name: W::NAME,
        run,
        area: &area,
        gate: &gate,
        shape,
    };
    match run.mode {
        TaskMode::Process => {
            let mut procs = Processes::spawn(workload, &plans)
                .map_err(|e| Error::io(format!("{}: forking tasks", W::NAME), e))?;
            driver.drive(&mut || procs.first_dead(), collectors, observer)
            // `procs` is dropped here: every task is killed and reaped.
        }
        TaskMode::Thread => tasks::with_threads(workload, &plans, stop, &gate, || {
            driver.drive(&mut || None, collectors, observer)
        })
        .map_err(|e| Error::io(format!("{}: running task threads", W::NAME), e))?,
    }
}

/// The parent's side of a run.
struct Driver<'a> {
    name: &'static str,
    run: &'a Run<'a>,
    area: &'a SharedArea,
    gate: &'a Gate,
    shape: RunShape,
}

impl Driver<'_> {
    fn drive(
        &self,
        first_dead: &mut dyn FnMut() -> Option<(usize, String)>,
        collectors: &mut [Box<dyn Collector>],
        observer: &mut Observer<'_>,
    ) -> Result<RunResult, Error> {
        self.wait_ready(first_dead)?;
        self.gate
            .open()
            .map_err(|e| Error::io("opening the start gate", e))?;

        let mut prev = Vec::with_capacity(self.run.nr_task as usize);
        let mut now = Vec::with_capacity(self.run.nr_task as usize);
        let mut deltas = Vec::with_capacity(self.run.nr_task as usize);
        let mut sample = |prev: &mut Vec<u64>, now: &mut Vec<u64>| {
            self.area.read_ops(now);
            deltas.clear();
            deltas.extend(now.iter().zip(prev.iter()).map(|(n, p)| n.wrapping_sub(*p)));
            std::mem::swap(prev, now);
            summary::second(&deltas)
        };

        self.area.read_ops(&mut prev);
        let warmup_start = Instant::now();
        for s in 1..=u64::from(self.run.warmup) {
            sleep_until(warmup_start + Duration::from_secs(s))?;
            let second = sample(&mut prev, &mut now);
            observer(&Progress::Second {
                phase: Phase::Warmup,
                sample: second,
            });
            self.check(first_dead)?;
        }

        let mut warnings = Vec::new();
        let mut started = Vec::with_capacity(collectors.len());
        for collector in collectors.iter_mut() {
            match collector.start() {
                Ok(()) => started.push(true),
                Err(e) => {
                    warnings.push(format!("{}: could not start: {e}", collector.name()));
                    started.push(false);
                }
            }
        }

        // The measured seconds begin once the collectors are running.
        self.area.read_ops(&mut prev);
        let measure_start = Instant::now();
        let mut samples: Vec<SecondSample> = Vec::with_capacity(self.run.seconds as usize);
        for s in 1..=u64::from(self.run.seconds) {
            sleep_until(measure_start + Duration::from_secs(s))?;
            let second = sample(&mut prev, &mut now);
            samples.push(second);
            observer(&Progress::Second {
                phase: Phase::Measurement,
                sample: second,
            });
            self.check(first_dead)?;
        }

        let mut result = summary::summarize(&self.shape, samples);
        result.warnings.extend(warnings);
        for (collector, started) in collectors.iter_mut().zip(started) {
            if started {
                if let Err(e) = collector.finish(&mut result) {
                    result.warnings.push(format!("{}: {e}", collector.name()));
                }
            }
        }
        Ok(result)
    }

    /// Waits until every task is set up and waiting at the gate.
    fn wait_ready(
        &self,
        first_dead: &mut dyn FnMut() -> Option<(usize, String)>,
    ) -> Result<(), Error> {
        let deadline = Instant::now() + SETUP_TIMEOUT;
        loop {
            self.check(first_dead)?;
            let ready = (0..self.run.nr_task as usize)
                .all(|i| self.area.slot(i).state() == TaskState::Ready);
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Bench(format!(
                    "{}: tasks not set up after {} s",
                    self.name,
                    SETUP_TIMEOUT.as_secs()
                )));
            }
            sleep_until(Instant::now() + Duration::from_millis(1))?;
        }
    }

    /// Fails the run if a task reported a failure or died.
    fn check(&self, first_dead: &mut dyn FnMut() -> Option<(usize, String)>) -> Result<(), Error> {
        for i in 0..self.run.nr_task as usize {
            match self.area.slot(i).state() {
                TaskState::SetupFailed(f) => {
                    return Err(Error::Bench(format!(
                        "{}: task {i}: set-up: {f}",
                        self.name
                    )));
                }
                TaskState::LoopFailed(f) => {
                    return Err(Error::Bench(format!("{}: task {i}: {f}", self.name)));
                }
                TaskState::Starting | TaskState::Ready => {}
            }
        }
        if let Some((i, how)) = first_dead() {
            return Err(Error::Bench(format!("{}: task {i} {how}", self.name)));
        }
        Ok(())
    }
}

fn sleep_until(deadline: Instant) -> Result<(), Error> {
    interrupt::sleep_until(deadline).map_err(|_| Error::Interrupted)
}
