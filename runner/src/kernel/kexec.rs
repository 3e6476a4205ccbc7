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
//! [`Kexec::dry_run`] records the kexec command lines instead of running
//! them, so the whole cycle is tested without rebooting anything.

use std::path::{Path, PathBuf};

use patchperf_common::protocol::{BootSlot, FailureReason, JobSpec};
use patchperf_common::run::Side;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::kernel::build::BuiltKernel;
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

#[cfg(test)]
mod tests {
    use super::*;
    use patchperf_common::protocol::{BaseSource, NrTask, WorkloadParams};
    use patchperf_common::run::TaskMode;

    fn kernel(key: &str) -> BuiltKernel {
        BuiltKernel {
            key: key.into(),
            source: "linux-source-6.1 sha256:ab".into(),
            patches_sha256: None,
            config_sha256: "cf".into(),
            compiler: "gcc 12".into(),
            build_seconds: 600.0,
            image_bytes: 1_000_000,
            dir: PathBuf::from(format!("/c/kernels/{key}")),
        }
    }

    fn job() -> JobSpec {
        JobSpec {
            job_id: 7,
            comparison_id: 3,
            attempt: 1,
            lease_seconds: 600,
            base: BaseSource::Tarball {
                name: "linux-source-6.1".into(),
            },
            mbox: String::new(),
            aa: false,
            patches_sha256: String::new(),
            config_fragment: None,
            workloads: vec!["open1".into()],
            params: WorkloadParams {
                mode: TaskMode::Process,
                nr_task: vec![NrTask::Count(1)],
                seconds: 5,
                warmup_seconds: 2,
                perf_stat: false,
                perf_profile: false,
            },
            backend: None,
            boots: vec![
                BootSlot {
                    seq: 0,
                    side: Side::Patched,
                },
                BootSlot {
                    seq: 1,
                    side: Side::Base,
                },
            ],
        }
    }

    #[test]
    fn a_job_walks_boot_collect_boot_collect_across_reboots() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = KexecState::new(job(), &kernel("aaaa"), &kernel("bbbb"));
        let mut seen = Vec::new();
        // Each loop turn is one start of the agent: load, act, save.
        s.save(dir.path()).unwrap();
        loop {
            let mut s2 = KexecState::load(dir.path()).unwrap().unwrap();
            let action = s2.action();
            seen.push(action.clone());
            match action {
                Action::Boot(..) => s2.booting(),
                Action::Collect(..) => s2.collected(),
                Action::Finished | Action::Failed(..) => break,
            }
            s2.save(dir.path()).unwrap();
            s = s2;
        }
        let p = BootSlot {
            seq: 0,
            side: Side::Patched,
        };
        let b = BootSlot {
            seq: 1,
            side: Side::Base,
        };
        assert_eq!(
            seen,
            [
                Action::Boot(0, p),
                Action::Collect(0, p),
                Action::Boot(1, b),
                Action::Collect(1, b),
                Action::Finished
            ]
        );
        assert_eq!(s.phase, Phase::Done);
        assert_eq!(
            s.kernel(Side::Patched).image(),
            Path::new("/c/kernels/bbbb/bzImage")
        );
        KexecState::clear(dir.path()).unwrap();
        assert_eq!(KexecState::load(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_failure_survives_the_reboot() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = KexecState::new(job(), &kernel("aaaa"), &kernel("bbbb"));
        s.booting();
        s.fail(FailureReason::NoResults, "boot 1 wrote no results");
        s.save(dir.path()).unwrap();
        let back = KexecState::load(dir.path()).unwrap().unwrap();
        assert_eq!(
            back.action(),
            Action::Failed(FailureReason::NoResults, "boot 1 wrote no results".into())
        );
    }

    #[test]
    fn the_kexec_command_line_keeps_the_machines_root_and_runs_the_guest() {
        let current =
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0-13-amd64 root=UUID=1234 ro quiet console=ttyS0,115200";
        let line = kernel_cmdline(
            current,
            Path::new("/usr/bin/patchperf-runner"),
            Path::new("/var/cache/patchperf/kexec/boot-000"),
        );
        assert_eq!(
            line,
            "root=UUID=1234 console=ttyS0,115200 rw panic=10 init=/usr/bin/patchperf-runner \
             -- guest --kexec-out /var/cache/patchperf/kexec/boot-000"
        );
        let mut k = Kexec::dry_run();
        k.boot(Path::new("/c/kernels/bbbb/bzImage"), &line).unwrap();
        assert_eq!(
            k.dry_run.unwrap(),
            [
                format!("kexec -l /c/kernels/bbbb/bzImage \"--command-line={line}\""),
                "kexec -e".to_string()
            ]
        );
    }
}
