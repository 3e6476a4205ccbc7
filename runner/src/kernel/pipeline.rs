//! The whole job, step by step: fetch → apply → configure → build (both
//! kernels), then for each boot the server ordered: boot → run → collect →
//! upload. Each step's failure becomes a [`JobFailure`] whose reason names
//! the step; scratch trees and QEMU processes never outlive the job.

use std::path::{Path, PathBuf};
use std::time::Duration;

use patchperf_common::metric;
use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, Side};

use crate::Error;
use crate::agent::executor::JobFailure;
use crate::kernel::build::{self, BuiltKernel, Make, Toolchain};
use crate::kernel::cache::{Cache, CacheLock};
use crate::kernel::config::{self, ConfigRecipe};
use crate::kernel::guest::{GuestRequest, GuestRun, REQUEST_FILE};
use crate::kernel::patch::{self, ApplyError};
use crate::kernel::qemu::{self, BootError, BootSpec};
use crate::kernel::source::{self, Pristine, Tree};
use crate::proc::{Event, Flow};

/// What the pipeline tells its caller while a job runs: the agent turns
/// these into state updates and uploads, `runner job` into progress bars
/// and files.
pub trait Events {
    /// A step begins.
    fn state(&mut self, state: JobState, message: &str);
    /// One line of the current step's output (make, the guest's console).
    fn line(&mut self, line: &str);
    /// One run is done; `Err` when it could not be kept (the job fails).
    fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error>;
    /// Stop at the next chance.
    fn cancelled(&self) -> bool;
}

/// How this runner executes jobs.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The cache directory.
    pub cache: Cache,
    /// The runner binary the guest runs as init (this one, normally).
    pub runner: PathBuf,
    /// Longest wait for a guest to come up; `None`: by mode.
    pub boot_limit: Option<Duration>,
    /// Longest a guest may run once up; `None`: from the runs' seconds.
    pub run_limit: Option<Duration>,
    /// Extra kernel parameters for every boot.
    pub extra_cmdline: Vec<String>,
}

impl Pipeline {
    /// The pipeline with the cache from the environment and this binary as
    /// the guest's init.
    pub fn from_env() -> Result<Pipeline, Error> {
        let runner =
            std::env::current_exe().map_err(|e| Error::io("finding the runner binary", e))?;
        Ok(Pipeline {
            cache: Cache::from_env(),
            runner,
            boot_limit: None,
            run_limit: None,
            extra_cmdline: Vec::new(),
        })
    }
}

/// The two built kernels of a job.
#[derive(Debug, Clone)]
pub struct Kernels {
    /// Without the series.
    pub base: BuiltKernel,
    /// With the series.
    pub patched: BuiltKernel,
}

impl Kernels {
    /// The kernel of one side.
    pub fn side(&self, side: Side) -> &BuiltKernel {
        match side {
            Side::Base => &self.base,
            Side::Patched => &self.patched,
        }
    }
}

/// Executes `job`: builds both kernels, then every boot in `job.boots`
/// order with every workload, reporting each run through `events`.
pub fn execute(
    pipeline: &Pipeline,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<(), JobFailure> {
    let lock = pipeline
        .cache
        .lock()
        .map_err(|e| failure(FailureReason::Other, "taking the cache", e))?;
    let kernels = prepare(&lock, job, events)?;
    let mode = choose_mode(&lock, job.backend, &kernels.base)?;
    let request = guest_request(job, mode);
    for slot in &job.boots {
        if events.cancelled() {
            return Err(JobFailure::new(FailureReason::Cancelled, "cancelled"));
        }
        let kernel = kernels.side(slot.side);
        events.state(
            JobState::Booting,
            &format!(
                "boot {} of {}: {} kernel ({})",
                slot.seq + 1,
                job.boots.len(),
                slot.side.as_str(),
                mode.as_str()
            ),
        );
        let results = boot_and_run(pipeline, &lock, kernel, *slot, mode, &request, events)?;
        events.state(
            JobState::Uploading,
            &format!("uploading {} runs of boot {}", results.len(), slot.seq + 1),
        );
        for r in results {
            events
                .result(*slot, r)
                .map_err(|e| failure(FailureReason::Other, "keeping a result", e))?;
        }
    }
    Ok(())
}

/// Fetch, apply, configure and build: the base kernel (from the cache when
/// this source, config and compiler were built before) and the patched one.
pub fn prepare(
    lock: &CacheLock,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<Kernels, JobFailure> {
    events.state(
        JobState::Fetching,
        &format!("fetching {}", job.base.describe()),
    );
    let pristine = source::fetch(lock, &job.base)
        .map_err(|e| failure(FailureReason::FetchFailed, "fetch", e))?;
    let toolchain =
        Toolchain::detect().map_err(|e| failure(FailureReason::BuildFailed, "finding gcc", e))?;
    let recipe = ConfigRecipe::new(job.config_fragment.clone())
        .map_err(|e| failure(FailureReason::BuildFailed, "config fragment", e))?;
    let base_key = build::base_key(&pristine.source_id, &recipe, &toolchain);
    let base = match BuiltKernel::find(lock, &base_key) {
        Some(k) => k,
        None => build_base(lock, &pristine, &recipe, &toolchain, &base_key, events)?,
    };
    let patches_sha256 = source::sha256_hex(job.mbox.as_bytes());
    let patched_key = build::patched_key(&base_key, &patches_sha256);
    let patched = match BuiltKernel::find(lock, &patched_key) {
        Some(k) => {
            events.state(JobState::Building, "patched kernel found in the cache");
            k
        }
        None => build_patched(lock, &pristine, &recipe, &toolchain, &base_key, job, events)?,
    };
    Ok(Kernels { base, patched })
}

fn build_base(
    lock: &CacheLock,
    pristine: &Pristine,
    recipe: &ConfigRecipe,
    toolchain: &Toolchain,
    key: &str,
    events: &mut dyn Events,
) -> Result<BuiltKernel, JobFailure> {
    let make = Make::new(
        &pristine.dir,
        &build::build_dir_name(key),
        toolchain,
        &lock.cache().ccache_dir(),
        &key[..12],
    );
    events.state(JobState::Building, "configuring the base kernel");
    let config_sha256 = configure(&make, recipe)?;
    events.state(JobState::Building, "building the base kernel");
    let seconds = make_bzimage(&make, events)?;
    let kernel = BuiltKernel {
        key: key.to_string(),
        source: pristine.source_id.clone(),
        patches_sha256: None,
        config_sha256,
        compiler: toolchain.compiler.clone(),
        build_seconds: seconds,
        image_bytes: 0,
        dir: PathBuf::new(),
    };
    kernel
        .store(lock, &make)
        .map_err(|e| failure(FailureReason::BuildFailed, "storing the base kernel", e))
}

fn build_patched(
    lock: &CacheLock,
    pristine: &Pristine,
    recipe: &ConfigRecipe,
    toolchain: &Toolchain,
    base_key: &str,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<BuiltKernel, JobFailure> {
    let patches_sha256 = source::sha256_hex(job.mbox.as_bytes());
    let key = build::patched_key(base_key, &patches_sha256);
    let scratch = lock
        .scratch("patched")
        .map_err(|e| failure(FailureReason::Other, "apply", e))?;
    events.state(
        JobState::Applying,
        "copying the source tree for the patched kernel",
    );
    let tree = Tree::copy_of(pristine, &scratch.path().join("linux"))
        .map_err(|e| failure(FailureReason::Other, "copying the source tree", e))?;
    let mbox = scratch.path().join("series.mbox");
    std::fs::write(&mbox, &job.mbox).map_err(|e| {
        failure(
            FailureReason::Other,
            "apply",
            Error::io("writing the mbox", e),
        )
    })?;
    events.state(JobState::Applying, "applying the patch series");
    let applied = match patch::apply(&tree, &mbox, scratch.path()) {
        Ok(n) => n,
        Err(ApplyError::DoesNotApply { patch, detail }) => {
            return Err(JobFailure {
                reason: FailureReason::PatchDoesNotApply,
                detail: format!(
                    "patch {patch} does not apply to {}:\n{detail}",
                    pristine.source_id
                ),
                log_tail: detail,
            });
        }
        Err(ApplyError::NoPatches) => {
            return Err(JobFailure::new(
                FailureReason::PatchDoesNotApply,
                "the mbox holds no patch (no unified diff in any message)",
            ));
        }
        Err(ApplyError::Machine(m)) => return Err(JobFailure::new(FailureReason::Other, m)),
    };
    let dir_name = build::build_dir_name(base_key);
    let base_build = pristine.dir.join(&dir_name);
    let make = Make::new(
        &tree.dir,
        &dir_name,
        toolchain,
        &lock.cache().ccache_dir(),
        &key[..12],
    );
    if base_build.join(".config").is_file() {
        // Start from the base's objects: only what the series touched
        // (newer mtimes) is rebuilt.
        events.state(JobState::Building, "copying the base build tree");
        source::copy_dir(&base_build, &make.build_dir())
            .map_err(|e| failure(FailureReason::Other, "copying the base build tree", e))?;
    } else {
        events.state(JobState::Building, "configuring the patched kernel");
        configure(&make, recipe)?;
    }
    events.state(
        JobState::Building,
        &format!("building the patched kernel ({applied} patches)"),
    );
    let seconds = make_bzimage(&make, events)?;
    // The series may change Kconfig; what counts is the .config it built.
    let config_sha256 = config::verify(&make, recipe)
        .map_err(|e| failure(FailureReason::BuildFailed, "patched kernel config", e))?;
    let kernel = BuiltKernel {
        key,
        source: pristine.source_id.clone(),
        patches_sha256: Some(patches_sha256),
        config_sha256,
        compiler: toolchain.compiler.clone(),
        build_seconds: seconds,
        image_bytes: 0,
        dir: PathBuf::new(),
    };
    kernel
        .store(lock, &make)
        .map_err(|e| failure(FailureReason::BuildFailed, "storing the patched kernel", e))
}

fn configure(make: &Make, recipe: &ConfigRecipe) -> Result<String, JobFailure> {
    if make.build_dir().join(".config").is_file() {
        if let Ok(sha) = config::verify(make, recipe) {
            return Ok(sha);
        }
    }
    config::configure(make, recipe).map_err(|e| failure(FailureReason::BuildFailed, "configure", e))
}

fn make_bzimage(make: &Make, events: &mut dyn Events) -> Result<f64, JobFailure> {
    let mut watcher = |ev: Event<'_>| {
        if let Event::Line(l) = ev {
            events.line(l);
        }
        if events.cancelled() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    match make.bzimage(&mut watcher) {
        Ok(d) => Ok(d.as_secs_f64()),
        Err(e) => {
            let first = e
                .log_tail()
                .and_then(build::first_error)
                .map(str::to_string);
            let mut f = failure(FailureReason::BuildFailed, "make bzImage", e);
            if let Some(first) = first {
                f.detail = format!("build failed: {first}");
            }
            Err(f)
        }
    }
}

/// The mode to boot in: the job's choice if this machine has it, else KVM
/// where a probe shows it runs at hardware speed, else `tcg-icount`.
fn choose_mode(
    lock: &CacheLock,
    requested: Option<MeasurementMode>,
    image_of: &BuiltKernel,
) -> Result<MeasurementMode, JobFailure> {
    match requested {
        Some(MeasurementMode::Tcg) => Ok(MeasurementMode::Tcg),
        Some(MeasurementMode::TcgIcount) => Ok(MeasurementMode::TcgIcount),
        Some(MeasurementMode::Kvm) => {
            let (ok, why) = kvm_usable(lock, &image_of.image());
            if ok {
                Ok(MeasurementMode::Kvm)
            } else {
                Err(JobFailure::new(
                    FailureReason::Unsupported,
                    format!("KVM was requested but is not usable here: {why}"),
                ))
            }
        }
        Some(other) => Err(JobFailure::new(
            FailureReason::Unsupported,
            format!(
                "{} boots are not available from this pipeline",
                other.as_str()
            ),
        )),
        None => {
            if kvm_usable(lock, &image_of.image()).0 {
                Ok(MeasurementMode::Kvm)
            } else {
                Ok(MeasurementMode::TcgIcount)
            }
        }
    }
}

/// The KVM probe's verdict, remembered per host boot in the cache.
pub fn kvm_usable(lock: &CacheLock, image: &Path) -> (bool, String) {
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let path = lock.cache().root().join("kvm-probe");
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Some((id, rest)) = text.split_once('\n') {
            if id == boot_id.trim() {
                let (ok, why) = rest.split_once(' ').unwrap_or((rest, ""));
                return (ok == "yes", why.trim().to_string());
            }
        }
    }
    let (ok, why) = qemu::probe_kvm(image);
    let verdict = format!(
        "{}\n{} {}\n",
        boot_id.trim(),
        if ok { "yes" } else { "no" },
        why
    );
    let _ = std::fs::write(&path, verdict);
    (ok, why)
}

/// The runs every boot of the job does.
pub fn guest_request(job: &JobSpec, mode: MeasurementMode) -> GuestRequest {
    let mut runs = Vec::new();
    for workload in &job.workloads {
        for nr_task in &job.params.nr_task {
            runs.push(GuestRun {
                workload: workload.clone(),
                mode: job.params.mode,
                nr_task: *nr_task,
                seconds: job.params.seconds,
                warmup_seconds: job.params.warmup_seconds,
                perf_stat: job.params.perf_stat,
                perf_profile: job.params.perf_profile,
            });
        }
    }
    GuestRequest {
        measurement: mode,
        runs,
    }
}

/// Time a guest may run: its runs' seconds, stretched by how much slower
/// than real time the mode runs, plus room for starting and stopping.
pub fn run_limit(request: &GuestRequest) -> Duration {
    let seconds: u64 = request
        .runs
        .iter()
        .map(|r| u64::from(r.seconds + r.warmup_seconds))
        .sum();
    let stretch = match request.measurement {
        MeasurementMode::TcgIcount => 10,
        MeasurementMode::Tcg => 4,
        _ => 2,
    };
    Duration::from_secs(seconds * stretch + 120)
}

fn boot_limit(mode: MeasurementMode) -> Duration {
    Duration::from_secs(match mode {
        MeasurementMode::Kvm => 60,
        _ => 180,
    })
}

/// Boot → run → collect for one boot slot; the results carry the kernel's
/// identity and the pipeline's facts.
pub fn boot_and_run(
    pipeline: &Pipeline,
    lock: &CacheLock,
    kernel: &BuiltKernel,
    slot: BootSlot,
    mode: MeasurementMode,
    request: &GuestRequest,
    events: &mut dyn Events,
) -> Result<Vec<RunResult>, JobFailure> {
    let out = lock
        .scratch(&format!("boot-{}", slot.seq))
        .map_err(|e| failure(FailureReason::Other, "boot", e))?;
    let text = serde_json::to_string_pretty(request)
        .map_err(|e| failure(FailureReason::Other, "boot", Error::json(e)))?;
    std::fs::write(out.path().join(REQUEST_FILE), text).map_err(|e| {
        failure(
            FailureReason::Other,
            "boot",
            Error::io("writing the guest request", e),
        )
    })?;
    let spec = BootSpec {
        image: kernel.image(),
        out_dir: out.path().to_path_buf(),
        runner: pipeline.runner.clone(),
        mode,
        smp: match mode {
            MeasurementMode::TcgIcount => 1,
            _ => std::thread::available_parallelism()
                .map_or(1, |n| n.get() as u32)
                .min(4),
        },
        boot_limit: pipeline.boot_limit.unwrap_or_else(|| boot_limit(mode)),
        run_limit: pipeline.run_limit.unwrap_or_else(|| run_limit(request)),
        extra_cmdline: pipeline.extra_cmdline.clone(),
    };
    let side = slot.side.as_str();
    let mut state_running = false;
    let mut watcher = |ev: Event<'_>| {
        if let Event::Line(l) = ev {
            if l.contains(crate::kernel::guest::UP_MARKER) && !state_running {
                state_running = true;
                events.state(
                    JobState::Running,
                    &format!("running workloads on the {side} kernel"),
                );
            }
            events.line(l);
        }
        if events.cancelled() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    let booted = qemu::boot(&spec, &mut watcher).map_err(|e| boot_failure(e, slot, &spec))?;
    let mut results = booted.results;
    let identity = kernel.identity(&booted.report.release, &booted.report.version);
    for r in &mut results {
        r.kernel = Some(identity.clone());
        r.measurement = mode;
        for (name, value) in [
            (metric::KERNEL_BUILD_SECONDS, kernel.build_seconds),
            (metric::KERNEL_BOOT_SECONDS, booted.boot_seconds),
            (metric::KERNEL_IMAGE_BYTES, kernel.image_bytes as f64),
        ] {
            r.metrics.push(MetricValue {
                name: name.to_string(),
                value,
            });
        }
        r.warnings.extend(booted.report.errors.iter().cloned());
    }
    Ok(results)
}

fn boot_failure(e: BootError, slot: BootSlot, spec: &BootSpec) -> JobFailure {
    let which = format!("the {} kernel (boot {})", slot.side.as_str(), slot.seq + 1);
    match e {
        BootError::Panic { text, console } => JobFailure {
            reason: FailureReason::KernelPanic,
            detail: format!("{which} panicked:\n{text}"),
            log_tail: console.to_string(),
        },
        BootError::BootTimeout { console } => JobFailure {
            reason: FailureReason::Timeout,
            detail: format!(
                "{which} did not come up within {} s",
                spec.boot_limit.as_secs()
            ),
            log_tail: console.to_string(),
        },
        BootError::RunTimeout {
            runs_started,
            console,
        } => JobFailure {
            reason: FailureReason::Timeout,
            detail: format!(
                "{which} did not finish its runs within {} s (hung in run {runs_started})",
                spec.run_limit.as_secs()
            ),
            log_tail: console.to_string(),
        },
        BootError::BootFailed { detail, console } => JobFailure {
            reason: FailureReason::BootFailed,
            detail: format!("{which}: {detail}"),
            log_tail: console.to_string(),
        },
        BootError::NoResults { detail, console } => JobFailure {
            reason: FailureReason::NoResults,
            detail: format!("{which}: {detail}"),
            log_tail: console.to_string(),
        },
        BootError::Cancelled => JobFailure::new(FailureReason::Cancelled, "cancelled"),
        BootError::Machine(e) => failure(FailureReason::Other, "boot", e),
    }
}

/// A failure of `step` with `reason`, unless the error says better
/// (a time limit → timeout, Ctrl-C → cancelled).
pub fn failure(reason: FailureReason, step: &str, e: Error) -> JobFailure {
    let log_tail = e.log_tail().unwrap_or_default().to_string();
    let reason = match e {
        Error::ProcessTimedOut { .. } => FailureReason::Timeout,
        Error::Interrupted => FailureReason::Cancelled,
        _ => reason,
    };
    let detail = match &e {
        Error::ProcessFailed {
            command, status, ..
        } => format!("{step}: `{command}` failed ({status})"),
        Error::ProcessTimedOut {
            command, seconds, ..
        } => {
            format!("{step}: `{command}` did not finish within {seconds} s")
        }
        other => format!("{step}: {other}"),
    };
    JobFailure {
        reason,
        detail,
        log_tail,
    }
}
