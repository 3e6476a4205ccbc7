//! `patchperf-runner job`: a whole comparison on this machine, no server.
//! Builds both kernels, boots them in randomized ABBA order and writes a
//! results directory that `patchperf-runner compare OUT/base OUT/patched`
//! reads. With `per_patch = true`, each patch of the series is measured
//! against the patches before it first (OUT/step-K/). Progress shows as a
//! spinner on a terminal, as plain lines otherwise. The job file's format
//! and how it becomes a job: [`jobfile`]; a job on the command line
//! instead (`--patches`, `--range`, `--commit`): [`flags`]. The reports
//! follow on standard output, judged as `compare` judges them.

pub mod flags;
pub mod jobfile;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use patchperf_common::protocol::{BootSlot, JobSpec, JobState};
use patchperf_common::run::RunResult;
use serde::Serialize;

use crate::Error;
use crate::cli::job::JobArgs;
use crate::kernel::cache::Cache;
use crate::kernel::pipeline::{self, Events, Pipeline};
use jobfile::JobFile;

/// Runs `patchperf-runner job`.
pub fn run(args: JobArgs) -> Result<(), Error> {
    let (job, spec) = match &args.file {
        Some(file) => {
            let job = JobFile::load(file)?;
            let spec = job.to_spec(file)?;
            (job, spec)
        }
        None => flags::job(&args)?,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .as_deref()
            .and_then(Path::file_stem)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "job".into());
        PathBuf::from(format!("{stem}-results"))
    });
    let mut pipeline = Pipeline::from_env()?;
    if let Some(cache) = args.cache {
        pipeline.cache = Cache::at(cache);
    }
    if let Some(n) = args.parallel {
        pipeline.parallel = n as usize;
    }
    crate::proc::install_interrupt_handler()?;
    if args.build_only {
        return build_only(&pipeline, &spec);
    }
    // Per patch: the steps first, each into OUT/step-K; a step whose patch
    // does not apply or build ends the job there (every later kernel
    // carries that patch), the steps before keep their results.
    let steps = if job.per_patch {
        job.step_specs(&spec)
    } else {
        Vec::new()
    };
    // Each step's reports as it ends, then the whole series': every
    // regression of any of them counts for --fail-on-regression.
    let mut regressions = Vec::new();
    for (k, step) in (1..).zip(&steps) {
        let dir = out.join(format!("step-{k}"));
        let of = steps.len();
        eprintln!("patch {k}/{of} against the patches before it:");
        let summary = run_job(&pipeline, step, &dir)?;
        eprintln!("{summary} runs in {}", dir.display());
        let compared = judged(&dir)?;
        println!("patch {k}/{of}:\n\n{}\n", compared.text.trim_end());
        regressions.extend(
            compared
                .regressions
                .iter()
                .map(|r| format!("patch {k}/{of}: {r}")),
        );
    }
    let summary = run_job(&pipeline, &spec, &out)?;
    eprintln!(
        "{} runs in {}; compare again with: patchperf-runner compare {} {}",
        summary,
        out.display(),
        out.join("base").display(),
        out.join("patched").display()
    );
    let mut compared = judged(&out)?;
    if !steps.is_empty() {
        println!("the whole series:\n");
    }
    println!("{}", compared.text.trim_end());
    regressions.append(&mut compared.regressions);
    compared.regressions = regressions;
    compared.ends(args.fail_on_regression)
}

/// The reports of the results in `dir`, as `compare` judges them (δ the
/// measurement mode's: no A/A here).
fn judged(dir: &Path) -> Result<super::compare::Compared, Error> {
    super::compare::compare_dirs(
        &dir.join("base"),
        &dir.join("patched"),
        "localhost",
        false,
        None,
    )
}

/// Builds (or finds in the cache) the job's two kernels and prints their
/// cache directories on standard output, progress on standard error.
fn build_only(pipeline: &Pipeline, spec: &JobSpec) -> Result<(), Error> {
    let lock = pipeline.cache.lock()?;
    // Nothing is written there: no results without boots.
    let mut events = ConsoleEvents::new(PathBuf::new());
    let kernels = pipeline::prepare::kernels(&lock, spec, &mut events);
    events.finish();
    let kernels = kernels.map_err(|f| Error::Job {
        reason: f.reason.as_str().to_string(),
        detail: f.detail,
        log_tail: f.log_tail,
    })?;
    println!("base {}", kernels.base.dir.display());
    println!("patched {}", kernels.patched.dir.display());
    Ok(())
}

/// OUT/job.json: what was run and how it ended.
#[derive(Debug, Serialize)]
struct JobRecord<'a> {
    job: &'a JobSpec,
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_tail: Option<&'a str>,
    runs: usize,
    seconds: f64,
}

/// Runs `spec` with `pipeline`, writing results under `out`; returns the
/// number of runs written.
pub fn run_job(pipeline: &Pipeline, spec: &JobSpec, out: &Path) -> Result<usize, Error> {
    for dir in [out.join("base"), out.join("patched")] {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    let started = Instant::now();
    let mut events = ConsoleEvents::new(out.to_path_buf());
    let outcome = pipeline::execute(pipeline, spec, &mut events);
    events.finish();
    let failure = outcome.as_ref().err();
    let record = JobRecord {
        job: spec,
        outcome: if failure.is_some() { "failed" } else { "done" },
        reason: failure.map(|f| f.reason.as_str()),
        detail: failure.map(|f| f.detail.as_str()),
        log_tail: failure.map(|f| f.log_tail.as_str()),
        runs: events.written,
        seconds: started.elapsed().as_secs_f64(),
    };
    let text = serde_json::to_string_pretty(&record).map_err(Error::json)?;
    let path = out.join("job.json");
    std::fs::write(&path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    match outcome {
        Ok(()) => Ok(events.written),
        Err(f) => Err(Error::Job {
            reason: f.reason.as_str().to_string(),
            detail: f.detail,
            log_tail: f.log_tail,
        }),
    }
}

/// Progress on the terminal, results into the directory.
struct ConsoleEvents {
    out: PathBuf,
    bar: Option<ProgressBar>,
    state: String,
    started: Instant,
    lines: u64,
    written: usize,
}

impl ConsoleEvents {
    fn new(out: PathBuf) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        ConsoleEvents {
            out,
            bar,
            state: String::new(),
            started: Instant::now(),
            lines: 0,
            written: 0,
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Events for ConsoleEvents {
    fn state(&mut self, state: JobState, message: &str) {
        self.state = format!("{}: {message}", state.as_str());
        self.lines = 0;
        match &self.bar {
            Some(bar) => {
                bar.println(format!("==> {}", self.state));
                bar.set_message(self.state.clone());
            }
            None => eprintln!(
                "[{:7.1}s] {}",
                self.started.elapsed().as_secs_f64(),
                self.state
            ),
        }
    }

    fn line(&mut self, line: &str) {
        self.lines += 1;
        let guest = line.contains("patchperf-guest:") || line.contains("Kernel panic");
        match &self.bar {
            Some(bar) => {
                let short: String = line.trim().chars().take(70).collect();
                bar.set_message(format!("{} — {} lines — {short}", self.state, self.lines));
                if guest {
                    bar.println(format!("    {line}"));
                }
            }
            None if guest => eprintln!("    {line}"),
            None => {}
        }
    }

    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error> {
        let name = format!(
            "{:03}-{}-{}.json",
            boot.seq, result.workload, result.nr_task
        );
        let path = self.out.join(boot.side.as_str()).join(name);
        let text = serde_json::to_string_pretty(&result).map_err(Error::json)?;
        std::fs::write(&path, text)
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        self.written += 1;
        Ok(())
    }

    fn cancelled(&self) -> bool {
        crate::proc::interrupted()
    }
}
