//! Boot → run → collect for one boot slot: the measurement mode (the job's
//! choice, else KVM where a probe shows it fast, else `tcg-icount`), the
//! guest's request and time limits, the QEMU boot, and the results
//! annotated with the kernel's identity and the pipeline's facts. A failed
//! boot becomes a [`JobFailure`] naming the kernel and the boot.

use std::path::Path;
use std::time::Duration;

use patchperf_common::metric;
use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, Side};

use super::failure::{JobFailure, failure};
use super::{Events, Pipeline};
use crate::Error;
use crate::kernel::boot::guest_protocol::{
    GuestReport, GuestRequest, GuestRun, REQUEST_FILE, UP_MARKER,
};
use crate::kernel::boot::kvm_probe::{KvmProbeFile, KvmVerdict};
use crate::kernel::boot::qemu::{self, BootError, BootSpec};
use crate::kernel::build::built::BuiltKernel;
use crate::kernel::cache::CacheLock;
use crate::proc::{Event, Flow};

/// The mode to boot in: the job's choice if this machine has it, else KVM
/// where a probe shows it runs at hardware speed, else `tcg-icount`.
pub fn choose_mode(
    lock: &CacheLock,
    requested: Option<MeasurementMode>,
    image_of: &BuiltKernel,
) -> Result<MeasurementMode, JobFailure> {
    match requested {
        Some(MeasurementMode::Tcg) => Ok(MeasurementMode::Tcg),
        Some(MeasurementMode::TcgIcount) => Ok(MeasurementMode::TcgIcount),
        Some(MeasurementMode::Kvm) => {
            let verdict = kvm_usable(lock, &image_of.image());
            if verdict.usable {
                Ok(MeasurementMode::Kvm)
            } else {
                Err(JobFailure::new(
                    FailureReason::Unsupported,
                    format!("KVM was requested but is not usable here: {}", verdict.why),
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
            if kvm_usable(lock, &image_of.image()).usable {
                Ok(MeasurementMode::Kvm)
            } else {
                Ok(MeasurementMode::TcgIcount)
            }
        }
    }
}

/// The KVM probe's verdict: remembered for this host boot, else found by
/// a probe boot of `image` (and remembered).
pub fn kvm_usable(lock: &CacheLock, image: &Path) -> KvmVerdict {
    let file = KvmProbeFile::of(lock.cache());
    if let Some(verdict) = file.read() {
        return verdict;
    }
    let (usable, why) = qemu::probe_kvm(image);
    let verdict = KvmVerdict { usable, why };
    file.write(&verdict);
    verdict
}

/// The runs every boot of the job does.
pub fn guest_request(job: &JobSpec, mode: MeasurementMode) -> GuestRequest {
    let mut runs = Vec::new();
    for workload in &job.workloads {
        for nr_task in &job.params.nr_task {
            runs.push(GuestRun {
                workload: workload.clone(),
                nr_task: *nr_task,
            });
        }
    }
    GuestRequest {
        measurement: mode,
        params: job.params.clone(),
        runs,
        syscall_paths: false,
    }
}

/// Time a guest may run: its runs' seconds, stretched by how much slower
/// than real time the mode runs, plus room for starting and stopping.
/// Under tcg-icount a guest second is about 2.5 s of a free host core, and
/// on a host shared at load 20 on 2 CPUs it took 18 s (9 workloads of 3 s
/// a run did not finish in 390 s): 30 leaves a hung guest found in
/// minutes and a slow one alone.
pub fn run_limit(request: &GuestRequest) -> Duration {
    let one = u64::from(request.params.seconds) + u64::from(request.params.warmup_seconds);
    let seconds = one * request.runs.len() as u64;
    let stretch = match request.measurement {
        MeasurementMode::TcgIcount => 30,
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

/// How progress names the kernel a boot of `side` runs: `base kernel`,
/// `patched kernel`, or, where the patched side carries no patch (an A/A
/// comparison, whose B side boots the base kernel too), `base kernel, B
/// side of the A/A`.
pub fn kernel_name(side: Side, kernel: &BuiltKernel) -> &'static str {
    match side {
        Side::Base => "base kernel",
        Side::Patched if kernel.patches_sha256.is_none() => "base kernel, B side of the A/A",
        Side::Patched => "patched kernel",
    }
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
    let request = GuestRequest {
        syscall_paths: pipeline.workload_paths.is_some(),
        ..request.clone()
    };
    let text = serde_json::to_string_pretty(&request)
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
        run_limit: pipeline.run_limit.unwrap_or_else(|| run_limit(&request)),
        extra_cmdline: pipeline.extra_cmdline.clone(),
    };
    let name = kernel_name(slot.side, kernel);
    let mut state_running = false;
    let mut watcher = |ev: Event<'_>| {
        if let Event::Line(l) = ev {
            if l.contains(UP_MARKER) && !state_running {
                state_running = true;
                events.state(
                    JobState::Running,
                    &format!("running workloads on the {name}"),
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
    let booted = qemu::boot(&spec, &mut watcher);
    if let Some(dir) = &pipeline.workload_paths {
        keep_files(out.path(), &dir.join(format!("boot-{}", slot.seq)))
            .map_err(|e| failure(FailureReason::Other, "keeping the guest's files", e))?;
    }
    let booted = booted.map_err(|e| boot_failure(e, slot, &spec))?;
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

/// Copies the files of a boot's out share into `to`.
fn keep_files(share: &Path, to: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("creating {}", to.display()), e))?;
    let entries = std::fs::read_dir(share)
        .map_err(|e| Error::io(format!("reading {}", share.display()), e))?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let dest = to.join(entry.file_name());
            std::fs::copy(entry.path(), &dest)
                .map_err(|e| Error::io(format!("copying to {}", dest.display()), e))?;
        }
    }
    Ok(())
}

/// Gives each result of a boot the kernel's identity, the mode and the
/// pipeline's facts (`kernel.build_seconds`, `kernel.boot_seconds`,
/// `kernel.image_bytes`).
pub fn annotate(
    results: &mut [RunResult],
    kernel: &BuiltKernel,
    report: &GuestReport,
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

/// `uploading 1 run of boot 2`: the progress line of a boot's results.
pub fn uploading(runs: usize, seq: u32) -> String {
    let noun = if runs == 1 { "run" } else { "runs" };
    format!("uploading {runs} {noun} of boot {}", seq + 1)
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn kernel(patches_sha256: Option<&str>) -> BuiltKernel {
        BuiltKernel {
            key: "k".into(),
            source: "linux-source-6.1 sha256:ab".into(),
            patches_sha256: patches_sha256.map(String::from),
            patches: patches_sha256.map(|_| 1),
            config_sha256: "cf".into(),
            compiler: "gcc 12".into(),
            build_seconds: 60.0,
            image_bytes: 1,
            dir: PathBuf::from("/c/kernels/k"),
        }
    }

    #[test]
    fn an_aa_comparisons_b_side_is_not_called_patched() {
        let base = kernel(None);
        assert_eq!(kernel_name(Side::Base, &base), "base kernel");
        assert_eq!(
            kernel_name(Side::Patched, &kernel(Some("ab"))),
            "patched kernel"
        );
        // In an A/A the B side boots the base kernel.
        assert_eq!(
            kernel_name(Side::Patched, &base),
            "base kernel, B side of the A/A"
        );
    }
}
