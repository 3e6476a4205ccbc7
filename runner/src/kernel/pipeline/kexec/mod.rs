//! Boot (kexec backend) for bare-metal lab machines: no emulator; the
//! runner's machine boots each kernel itself with kexec. A job then spans
//! reboots, so its progress lives on disk (`<cache>/kexec/state.json`) and
//! the agent resumes it when it starts again after each reboot.
//!
//! One cycle per boot slot: write the slot's request into
//! `kexec/boot-<seq>/`, save the state as "in guest", `kexec -l <bzImage>
//! --command-line=…`, `kexec -e`. The new kernel runs the runner as init
//! (`guest --kexec-out <dir>`): it does the runs, writes the results into
//! that directory on the machine's own root file system and reboots into
//! the machine's normal kernel. There the agent finds the state "in guest",
//! collects and reports the slot's results and starts the next cycle.
//!
//! [`kexec_step`] is one start of the agent in such a job: the state
//! machine ([`KexecState`]) driven through the pipeline's steps.
//! [`Kexec::dry_run`] records the kexec command lines instead of running
//! them, so the whole cycle is tested without rebooting anything.

use std::path::{Path, PathBuf};

use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec, JobState};
use patchperf_common::run::{MeasurementMode, Side};
use serde::{Deserialize, Serialize};

use super::failure::{JobFailure, failure};
use super::{Events, Pipeline, boot, prepare};
use crate::Error;
use crate::kernel::boot::guest_protocol::REQUEST_FILE;
use crate::kernel::boot::qemu;
use crate::kernel::build::built::BuiltKernel;
use crate::proc::Cmd;

/// The state file, under the kexec directory.
pub const STATE_FILE: &str = "state.json";

/// Where a job stands between reboots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum Phase {
    /// Ready to boot slot `next`.
    Ready,
    /// Slot `boot` was kexec'd; its results are to be collected.
    InGuest {
        /// Index into the job's boots.
        boot: usize,
    },
    /// Every slot was collected.
    Done,
    /// The job failed; the agent reports it and forgets the state.
    Failed {
        /// Why.
        reason: FailureReason,
        /// The specifics.
        detail: String,
    },
}

/// A kexec job on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KexecState {
    /// The job.
    pub job: JobSpec,
    /// The built kernels (paths in the cache).
    pub base: KernelRef,
    /// The built patched kernel.
    pub patched: KernelRef,
    /// Next slot to boot.
    pub next: usize,
    /// Where the job stands.
    pub phase: Phase,
}

/// A built kernel as the state file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRef {
    /// Its cache directory (`kernels/<key>`).
    pub dir: PathBuf,
    /// The kernel's record.
    pub kernel: BuiltKernel,
}

impl KernelRef {
    /// Keeps `kernel` with its directory.
    pub fn of(kernel: &BuiltKernel) -> Self {
        KernelRef {
            dir: kernel.dir.clone(),
            kernel: kernel.clone(),
        }
    }

    /// The kernel with its directory restored.
    pub fn built(&self) -> BuiltKernel {
        let mut k = self.kernel.clone();
        k.dir = self.dir.clone();
        k
    }
}

/// What to do next for a kexec job.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Boot this slot.
    Boot(usize, BootSlot),
    /// Collect the results of this slot (we are back from it).
    Collect(usize, BootSlot),
    /// All slots collected.
    Finished,
    /// The job failed.
    Failed(FailureReason, String),
}

impl KexecState {
    /// A fresh state for `job` with its two kernels.
    pub fn new(job: JobSpec, base: &BuiltKernel, patched: &BuiltKernel) -> Self {
        KexecState {
            job,
            base: KernelRef::of(base),
            patched: KernelRef::of(patched),
            next: 0,
            phase: Phase::Ready,
        }
    }

    /// The next action, from the state alone.
    pub fn action(&self) -> Action {
        match &self.phase {
            Phase::Ready if self.next >= self.job.boots.len() => Action::Finished,
            Phase::Ready => Action::Boot(self.next, self.job.boots[self.next]),
            Phase::InGuest { boot } => match self.job.boots.get(*boot) {
                Some(slot) => Action::Collect(*boot, *slot),
                None => Action::Failed(
                    FailureReason::Other,
                    format!("kexec state names boot {boot} of {}", self.job.boots.len()),
                ),
            },
            Phase::Done => Action::Finished,
            Phase::Failed { reason, detail } => Action::Failed(*reason, detail.clone()),
        }
    }

    /// The slot `next` was handed to kexec.
    pub fn booting(&mut self) {
        self.phase = Phase::InGuest { boot: self.next };
    }

    /// The slot we came back from was collected.
    pub fn collected(&mut self) {
        if let Phase::InGuest { boot } = self.phase {
            self.next = boot + 1;
            self.phase = if self.next >= self.job.boots.len() {
                Phase::Done
            } else {
                Phase::Ready
            };
        }
    }

    /// The job failed.
    pub fn fail(&mut self, reason: FailureReason, detail: impl Into<String>) {
        self.phase = Phase::Failed {
            reason,
            detail: detail.into(),
        };
    }

    /// The kernel a side boots.
    pub fn kernel(&self, side: Side) -> BuiltKernel {
        match side {
            Side::Base => self.base.built(),
            Side::Patched => self.patched.built(),
        }
    }

    /// Reads the state in `dir`, if a job is in progress.
    pub fn load(dir: &Path) -> Result<Option<KexecState>, Error> {
        let path = dir.join(STATE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(Error::json),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
        }
    }

    /// Writes the state to `dir` (atomically, and synced: a reboot follows).
    pub fn save(&self, dir: &Path) -> Result<(), Error> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let tmp = dir.join("state.json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(Error::json)?;
        let file = std::fs::File::create(&tmp)
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        std::io::Write::write_all(&mut &file, text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        std::fs::rename(&tmp, dir.join(STATE_FILE))
            .map_err(|e| Error::io("saving the kexec state", e))?;
        nix::unistd::sync();
        Ok(())
    }

    /// Removes the state: the job is over and reported.
    pub fn clear(dir: &Path) -> Result<(), Error> {
        match std::fs::remove_file(dir.join(STATE_FILE)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("removing the kexec state", e)),
        }
    }
}

/// The results directory of boot slot `seq`.
pub fn boot_dir(kexec_dir: &Path, seq: u32) -> PathBuf {
    kexec_dir.join(format!("boot-{seq:03}"))
}

/// Kernel parameters for a kexec boot: the machine's own root parameters
/// (from its current command line, without `BOOT_IMAGE=` and `init=`),
/// writable, with the runner as init writing into `out`.
pub fn kernel_cmdline(current: &str, runner: &Path, out: &Path) -> String {
    let mut p: Vec<String> = current
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter(|w| {
            !(w.starts_with("BOOT_IMAGE=")
                || w.starts_with("init=")
                || *w == "ro"
                || *w == "rw"
                || *w == "quiet"
                || w.starts_with("panic="))
        })
        .map(str::to_string)
        .collect();
    p.push("rw".into());
    // On a panic, reboot into the normal kernel after 10 s: the agent then
    // finds the slot without results.
    p.push("panic=10".into());
    p.push(format!("init={}", runner.display()));
    p.push("--".into());
    p.push("guest".into());
    p.push("--kexec-out".into());
    p.push(out.display().to_string());
    p.join(" ")
}

/// Runs kexec, or (dry run) records what it would run.
#[derive(Debug, Default)]
pub struct Kexec {
    /// When set, commands are recorded here instead of run.
    pub dry_run: Option<Vec<String>>,
}

impl Kexec {
    /// A kexec that records instead of rebooting.
    pub fn dry_run() -> Self {
        Kexec {
            dry_run: Some(Vec::new()),
        }
    }

    /// Loads `image` with `cmdline` and executes it. Returns only in a dry
    /// run (or when kexec fails).
    pub fn boot(&mut self, image: &Path, cmdline: &str) -> Result<(), Error> {
        let load = Cmd::new("kexec")
            .arg("-l")
            .arg(image)
            .arg(format!("--command-line={cmdline}"));
        let exec = Cmd::new("kexec").arg("-e");
        match &mut self.dry_run {
            Some(log) => {
                log.push(load.display());
                log.push(exec.display());
                Ok(())
            }
            None => {
                load.run()?;
                nix::unistd::sync();
                exec.run()?;
                Err(Error::Usage("kexec -e returned without rebooting".into()))
            }
        }
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
    kexec: &mut Kexec,
    events: &mut dyn Events,
) -> Result<KexecProgress, JobFailure> {
    let lock = pipeline
        .cache
        .lock()
        .map_err(|e| failure(FailureReason::Other, "taking the cache", e))?;
    let dir = lock.cache().root().join(KEXEC_DIR);
    let io = |e: Error| failure(FailureReason::Other, "kexec state", e);
    let mut state = match KexecState::load(&dir).map_err(io)? {
        Some(s) if s.job.job_id == job.job_id && s.job.comparison_id == job.comparison_id => s,
        _ => {
            let kernels = prepare::kernels(&lock, job, events)?;
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
                let request = boot::guest_request(job, MeasurementMode::Kexec);
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
                        "kexec into the {} (boot {})",
                        boot::kernel_name(slot.side, &kernel),
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
                        events.state(
                            JobState::Uploading,
                            &boot::uploading(results.len(), slot.seq),
                        );
                        boot::annotate(&mut results, &kernel, &report, 0.0, MeasurementMode::Kexec);
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod step_tests;
