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
use crate::kernel::patch::{self, Applied, ApplyError};
use crate::kernel::qemu::{self, BootError, BootSpec};
use crate::kernel::source::{self, Pristine, SourceKind, Tree};
use crate::kernel::view::{self, View};
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
                "boot {}: {} kernel ({})",
                slot.seq + 1,
                slot.side.as_str(),
                mode.as_str()
            ),
        );
        let results = boot_and_run(pipeline, &lock, kernel, *slot, mode, &request, events)?;
        events.state(JobState::Uploading, &uploading(results.len(), slot.seq));
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
    if job.aa {
        // A/A: the "patched" boots boot the base kernel too.
        let base = match BuiltKernel::find(lock, &base_key) {
            Some(k) => k,
            None => build_base(lock, &pristine, &recipe, &toolchain, &base_key, events)?,
        };
        events.state(
            JobState::Building,
            "A/A comparison: both sides boot the base kernel",
        );
        return Ok(Kernels {
            patched: base.clone(),
            base,
        });
    }
    let patches_sha256 = source::sha256_hex(job.mbox.as_bytes());
    let patched_key = build::patched_key(&base_key, &patches_sha256);
    let cached_patched = BuiltKernel::find(lock, &patched_key);
    // Apply before building anything: a series that does not apply fails
    // the job in seconds, not after a cold build.
    let patched_tree = match cached_patched {
        Some(_) => None,
        None => Some(apply_series(lock, &pristine, job, events)?),
    };
    let base = match BuiltKernel::find(lock, &base_key) {
        Some(k) => k,
        None => build_base(lock, &pristine, &recipe, &toolchain, &base_key, events)?,
    };
    let patched = match (cached_patched, patched_tree) {
        (Some(k), _) => {
            events.state(JobState::Building, "patched kernel found in the cache");
            k
        }
        (None, Some(tree)) => build_patched(
            lock,
            &pristine,
            &recipe,
            &toolchain,
            &base_key,
            &patches_sha256,
            tree,
            events,
        )?,
        (None, None) => {
            unreachable!("the series is applied whenever the patched kernel is not cached")
        }
    };
    Ok(Kernels { base, patched })
}

/// A patched copy of the source in a scratch directory; the tree goes
/// first (a git worktree unregisters itself), then the directory.
#[derive(Debug)]
pub struct PatchedTree {
    tree: Tree,
    applied: Applied,
    _scratch: tempfile::TempDir,
}

/// Apply step: a fresh copy of the pristine tree with the series on it.
fn apply_series(
    lock: &CacheLock,
    pristine: &Pristine,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<PatchedTree, JobFailure> {
    let scratch = lock
        .scratch("patched")
        .map_err(|e| failure(FailureReason::Other, "apply", e))?;
    let tree = patched_tree(pristine, scratch.path(), events)?;
    let mbox = scratch.path().join("series.mbox");
    std::fs::write(&mbox, &job.mbox).map_err(|e| {
        failure(
            FailureReason::Other,
            "apply",
            Error::io("writing the mbox", e),
        )
    })?;
    events.state(JobState::Applying, "applying the patch series");
    match patch::apply(&tree, &mbox, scratch.path()) {
        Ok(applied) => Ok(PatchedTree {
            tree,
            applied,
            _scratch: scratch,
        }),
        Err(ApplyError::DoesNotApply { patch, detail }) => Err(JobFailure {
            reason: FailureReason::PatchDoesNotApply,
            detail: format!(
                "patch {patch} does not apply to {}:\n{detail}",
                pristine.source_id
            ),
            log_tail: detail,
        }),
        Err(ApplyError::NoPatches) => Err(JobFailure::new(
            FailureReason::PatchDoesNotApply,
            "the mbox holds no patch (no unified diff in any message)",
        )),
        Err(ApplyError::Machine(m)) => Err(JobFailure::new(FailureReason::Other, m)),
    }
}

/// The patched side's tree: an overlay on the pristine tree where overlayfs
/// works (nothing copied), else a full copy.
fn patched_tree(
    pristine: &Pristine,
    scratch: &Path,
    events: &mut dyn Events,
) -> Result<Tree, JobFailure> {
    let dest = scratch.join("linux");
    if pristine.kind == SourceKind::Tarball {
        match view::overlay_works(&pristine.dir, scratch) {
            Ok(()) => {
                return Tree::overlay_on(pristine, &dest)
                    .map_err(|e| failure(FailureReason::Other, "apply", e));
            }
            Err(why) => events.line(&format!(
                "patchperf: overlayfs not usable here ({why}); copying the tree instead"
            )),
        }
    }
    events.state(
        JobState::Applying,
        "copying the source tree for the patched kernel",
    );
    Tree::copy_of(pristine, &dest)
        .map_err(|e| failure(FailureReason::Other, "copying the source tree", e))
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
        &View::plain(&pristine.dir),
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

#[allow(clippy::too_many_arguments)]
fn build_patched(
    lock: &CacheLock,
    pristine: &Pristine,
    recipe: &ConfigRecipe,
    toolchain: &Toolchain,
    base_key: &str,
    patches_sha256: &str,
    patched: PatchedTree,
    events: &mut dyn Events,
) -> Result<BuiltKernel, JobFailure> {
    let key = build::patched_key(base_key, patches_sha256);
    let tree = &patched.tree;
    let applied = &patched.applied;
    let dir_name = build::build_dir_name(base_key);
    let base_build = pristine.dir.join(&dir_name);
    let make = Make::new(
        &tree.view,
        &dir_name,
        toolchain,
        &lock.cache().ccache_dir(),
        &key[..12],
    );
    if base_build.join(".config").is_file() {
        // Start from the base's objects: only what the series touched is
        // rebuilt. An overlay has them in its lower layer already; a copy
        // gets a copy.
        if let Some(copy) = tree.copy_dir() {
            events.state(JobState::Building, "copying the base build tree");
            source::copy_dir(&base_build, &copy.join(&dir_name))
                .map_err(|e| failure(FailureReason::Other, "copying the base build tree", e))?;
        }
        // The series went on before the base was built (to fail fast), so
        // the base's objects can be newer than the patched sources: make
        // would keep them and build the base kernel again under the
        // patched kernel's name. Touched now, the patched files are newer
        // than anything built.
        if !applied.files.is_empty() {
            tree.view
                .cmd("touch")
                .args(["--no-create", "--"])
                .args(&applied.files)
                .run()
                .map_err(|e| failure(FailureReason::Other, "touching the patched files", e))?;
        }
    } else {
        events.state(JobState::Building, "configuring the patched kernel");
        configure(&make, recipe)?;
    }
    events.state(
        JobState::Building,
        &format!(
            "building the patched kernel ({} patches, {} files)",
            applied.patches,
            applied.files.len()
        ),
    );
    let seconds = make_bzimage(&make, events)?;
    // The series may change Kconfig; what counts is the .config it built.
    let config_sha256 = config::verify(&make, recipe)
        .map_err(|e| failure(FailureReason::BuildFailed, "patched kernel config", e))?;
    let kernel = BuiltKernel {
        key,
        source: pristine.source_id.clone(),
        patches_sha256: Some(patches_sha256.to_string()),
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
    if make.has(".config") {
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
    annotate(
        &mut results,
        kernel,
        &booted.report,
        booted.boot_seconds,
        mode,
    );
    Ok(results)
}

/// Gives each result of a boot the kernel's identity, the mode and the
/// pipeline's facts (`kernel.build_seconds`, `kernel.boot_seconds`,
/// `kernel.image_bytes`).
fn annotate(
    results: &mut [RunResult],
    kernel: &BuiltKernel,
    report: &crate::kernel::guest::GuestReport,
    boot_seconds: f64,
    mode: MeasurementMode,
) {
    let identity = kernel.identity(&report.release, &report.version);
    for r in results {
        r.kernel = Some(identity.clone());
        r.measurement = mode;
        for (name, value) in [
            (metric::KERNEL_BUILD_SECONDS, kernel.build_seconds),
            (metric::KERNEL_BOOT_SECONDS, boot_seconds),
            (metric::KERNEL_IMAGE_BYTES, kernel.image_bytes as f64),
        ] {
            r.metrics.push(MetricValue {
                name: name.to_string(),
                value,
            });
        }
        r.warnings.extend(report.errors.iter().cloned());
    }
}

/// The directory of the cache that carries a kexec job across reboots.
pub const KEXEC_DIR: &str = "kexec";

/// Where a kexec job stands after [`kexec_step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KexecProgress {
    /// A kernel was kexec'd (only returns in a dry run): call again after
    /// the reboot.
    Rebooting,
    /// Every boot was collected and reported.
    Finished,
}

/// One start of the agent in a kexec job on bare metal: collects the boot
/// it comes back from (if any), then kexecs the next one, or finishes.
/// The state in `<cache>/kexec/` carries the job across reboots; kernels
/// are built on the first call. `current_cmdline` is the machine's own
/// kernel command line (its root), from `/proc/cmdline`.
pub fn kexec_step(
    pipeline: &Pipeline,
    job: &JobSpec,
    current_cmdline: &str,
    kexec: &mut crate::kernel::kexec::Kexec,
    events: &mut dyn Events,
) -> Result<KexecProgress, JobFailure> {
    use crate::kernel::kexec::{Action, KexecState, boot_dir, kernel_cmdline};
    let lock = pipeline
        .cache
        .lock()
        .map_err(|e| failure(FailureReason::Other, "taking the cache", e))?;
    let dir = lock.cache().root().join(KEXEC_DIR);
    let io = |e: Error| failure(FailureReason::Other, "kexec state", e);
    let mut state = match KexecState::load(&dir).map_err(io)? {
        Some(s) if s.job.job_id == job.job_id && s.job.comparison_id == job.comparison_id => s,
        _ => {
            let kernels = prepare(&lock, job, events)?;
            let s = KexecState::new(job.clone(), &kernels.base, &kernels.patched);
            s.save(&dir).map_err(io)?;
            s
        }
    };
    loop {
        match state.action() {
            Action::Boot(_, slot) => {
                let out = boot_dir(&dir, slot.seq);
                let _ = std::fs::remove_dir_all(&out);
                std::fs::create_dir_all(&out)
                    .map_err(|e| io(Error::io(format!("creating {}", out.display()), e)))?;
                let request = guest_request(job, MeasurementMode::Kexec);
                let text =
                    serde_json::to_string_pretty(&request).map_err(|e| io(Error::json(e)))?;
                std::fs::write(out.join(REQUEST_FILE), text)
                    .map_err(|e| io(Error::io("writing the guest request", e)))?;
                state.booting();
                state.save(&dir).map_err(io)?;
                let kernel = state.kernel(slot.side);
                events.state(
                    JobState::Booting,
                    &format!(
                        "kexec into the {} kernel (boot {})",
                        slot.side.as_str(),
                        slot.seq + 1
                    ),
                );
                let cmdline = kernel_cmdline(current_cmdline, &pipeline.runner, &out);
                if let Err(e) = kexec.boot(&kernel.image(), &cmdline) {
                    state.fail(FailureReason::BootFailed, e.to_string());
                    state.save(&dir).map_err(io)?;
                    continue;
                }
                return Ok(KexecProgress::Rebooting);
            }
            Action::Collect(_, slot) => {
                let out = boot_dir(&dir, slot.seq);
                let kernel = state.kernel(slot.side);
                match qemu::collect(&out) {
                    Ok((report, mut results)) if !results.is_empty() => {
                        events.state(JobState::Uploading, &uploading(results.len(), slot.seq));
                        annotate(&mut results, &kernel, &report, 0.0, MeasurementMode::Kexec);
                        for r in results {
                            events.result(slot, r).map_err(|e| {
                                failure(FailureReason::Other, "keeping a result", e)
                            })?;
                        }
                        state.collected();
                    }
                    Ok((report, _)) => state.fail(
                        FailureReason::NoResults,
                        format!(
                            "boot {} wrote no results: {}",
                            slot.seq + 1,
                            report.errors.join("; ")
                        ),
                    ),
                    Err(detail) => state.fail(
                        FailureReason::NoResults,
                        format!(
                            "boot {} (kexec): {detail}; the kernel may have panicked",
                            slot.seq + 1
                        ),
                    ),
                }
                state.save(&dir).map_err(io)?;
            }
            Action::Finished => {
                KexecState::clear(&dir).map_err(io)?;
                return Ok(KexecProgress::Finished);
            }
            Action::Failed(reason, detail) => {
                KexecState::clear(&dir).map_err(io)?;
                return Err(JobFailure::new(reason, detail));
            }
        }
    }
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

/// `uploading 1 run of boot 2`: the progress line of a boot's results.
fn uploading(runs: usize, seq: u32) -> String {
    let noun = if runs == 1 { "run" } else { "runs" };
    format!("uploading {runs} {noun} of boot {}", seq + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::guest::{GuestReport, REPORT_FILE, run_file};
    use crate::kernel::kexec::{Kexec, KexecState, boot_dir};
    use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
    use patchperf_common::run::TaskMode;

    #[derive(Default)]
    struct Rec {
        results: Vec<(BootSlot, RunResult)>,
    }
    impl Events for Rec {
        fn state(&mut self, _: JobState, _: &str) {}
        fn line(&mut self, _: &str) {}
        fn result(&mut self, boot: BootSlot, result: RunResult) -> Result<(), Error> {
            self.results.push((boot, result));
            Ok(())
        }
        fn cancelled(&self) -> bool {
            false
        }
    }

    fn kernel(dir: &Path, key: &str) -> BuiltKernel {
        let kdir = dir.join("kernels").join(key);
        std::fs::create_dir_all(&kdir).unwrap();
        std::fs::write(kdir.join("bzImage"), "not really a kernel").unwrap();
        BuiltKernel {
            key: key.repeat(16),
            source: "linux-source-6.1 sha256:ab".into(),
            patches_sha256: (key == "p").then(|| "5e7".to_string()),
            config_sha256: "cf".into(),
            compiler: "gcc 12".into(),
            build_seconds: 600.0,
            image_bytes: 19,
            dir: kdir,
        }
    }

    fn job() -> JobSpec {
        JobSpec {
            job_id: 9,
            comparison_id: 4,
            attempt: 1,
            lease_seconds: 600,
            base: BaseSource::Tarball {
                name: "linux-source-6.1".into(),
            },
            mbox: String::new(),
            aa: false,
            patches_sha256: String::new(),
            config_fragment: None,
            workloads: vec!["dup1".into()],
            params: WorkloadParams {
                mode: TaskMode::Process,
                nr_task: vec![NrTask::Count(1)],
                seconds: 5,
                warmup_seconds: 1,
                perf_stat: false,
                perf_profile: false,
            },
            backend: Some(MeasurementMode::Kexec),
            boots: vec![
                BootSlot {
                    seq: 0,
                    side: Side::Base,
                },
                BootSlot {
                    seq: 1,
                    side: Side::Patched,
                },
            ],
        }
    }

    /// A pipeline caching under `dir` whose kexec state holds [`job`] with
    /// both kernels built, as a start before the first kexec finds it.
    fn kexec_job_saved(dir: &Path) -> (Pipeline, PathBuf) {
        let pipeline = Pipeline {
            cache: Cache::at(dir.join("cache")),
            runner: PathBuf::from("/usr/bin/patchperf-runner"),
            boot_limit: None,
            run_limit: None,
            extra_cmdline: vec![],
        };
        let kexec_dir = dir.join("cache/kexec");
        KexecState::new(job(), &kernel(dir, "b"), &kernel(dir, "p"))
            .save(&kexec_dir)
            .unwrap();
        (pipeline, kexec_dir)
    }

    /// What the kexec'd kernel's init leaves in its directory.
    fn guest_writes(dir: &Path, version: &str) {
        let result = RunResult {
            workload: "dup1".into(),
            mode: TaskMode::Process,
            nr_task: 1,
            warmup_seconds: 1,
            seconds: 5,
            measurement: MeasurementMode::Kexec,
            kernel: None,
            samples: vec![],
            metrics: vec![MetricValue {
                name: "will-it-scale.per_process_ops".into(),
                value: 1000.0,
            }],
            series: vec![],
            unsupported: vec![],
            profile_event: None,
            warnings: vec![],
        };
        std::fs::write(
            dir.join(run_file(0)),
            serde_json::to_string(&result).unwrap(),
        )
        .unwrap();
        let report = GuestReport {
            release: "6.1.192".into(),
            version: version.into(),
            nr_cpu: 8,
            results: vec![run_file(0)],
            errors: vec![],
            finished: true,
        };
        std::fs::write(
            dir.join(REPORT_FILE),
            serde_json::to_string(&report).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn a_kexec_job_boots_collects_and_resumes_across_simulated_reboots() {
        let tmp = tempfile::tempdir().unwrap();
        let (pipeline, kexec_dir) = kexec_job_saved(tmp.path());
        let (base, patched) = (kernel(tmp.path(), "b"), kernel(tmp.path(), "p"));
        let cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro";
        let mut rec = Rec::default();

        // Start 1: kexec into the base kernel.
        let mut k = Kexec::dry_run();
        assert_eq!(
            kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
            Ok(KexecProgress::Rebooting)
        );
        let boot0 = boot_dir(&kexec_dir, 0);
        assert!(boot0.join(REQUEST_FILE).is_file());
        let log = k.dry_run.take().unwrap();
        assert_eq!(
            log[0],
            format!(
                "kexec -l {} \"--command-line=root=/dev/sda1 rw panic=10 init=/usr/bin/patchperf-runner -- guest --kexec-out {}\"",
                base.image().display(),
                boot0.display()
            )
        );
        assert_eq!(log[1], "kexec -e");
        guest_writes(&boot0, "#bbbbbbbbbbbb SMP");

        // Start 2 (after the reboot): collect boot 0, kexec into patched.
        let mut k = Kexec::dry_run();
        assert_eq!(
            kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
            Ok(KexecProgress::Rebooting)
        );
        assert!(k.dry_run.unwrap()[0].contains(&patched.image().display().to_string()));
        assert_eq!(rec.results.len(), 1);
        guest_writes(&boot_dir(&kexec_dir, 1), "#pppppppppppp SMP");

        // Start 3: collect boot 1 and finish.
        let mut k = Kexec::dry_run();
        assert_eq!(
            kexec_step(&pipeline, &job(), cmdline, &mut k, &mut rec),
            Ok(KexecProgress::Finished)
        );
        assert!(k.dry_run.unwrap().is_empty());
        let sides: Vec<Side> = rec.results.iter().map(|(s, _)| s.side).collect();
        assert_eq!(sides, [Side::Base, Side::Patched]);
        let (_, r) = &rec.results[1];
        assert_eq!(r.measurement, MeasurementMode::Kexec);
        let id = r.kernel.as_ref().unwrap();
        assert_eq!(id.patches_sha256.as_deref(), Some("5e7"));
        assert_eq!(id.version, "#pppppppppppp SMP");
        assert_eq!(KexecState::load(&kexec_dir).unwrap(), None);
    }

    #[test]
    fn a_kexec_boot_that_left_nothing_fails_the_job_as_no_results() {
        let tmp = tempfile::tempdir().unwrap();
        let (pipeline, kexec_dir) = kexec_job_saved(tmp.path());
        let mut rec = Rec::default();
        let mut k = Kexec::dry_run();
        kexec_step(&pipeline, &job(), "root=/dev/sda1", &mut k, &mut rec).unwrap();
        // The kernel panicked and the machine came back: nothing written.
        let failure =
            kexec_step(&pipeline, &job(), "root=/dev/sda1", &mut k, &mut rec).unwrap_err();
        assert_eq!(failure.reason, FailureReason::NoResults);
        assert!(failure.detail.contains("boot 1"), "{}", failure.detail);
        assert_eq!(KexecState::load(&kexec_dir).unwrap(), None);
    }
}
