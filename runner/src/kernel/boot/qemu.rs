//! Boot (QEMU backends): boots a built kernel with the host's root shared
//! read-only over virtio 9p, a second 9p share for the results, and the
//! runner binary as init; watches the serial console for the guest's
//! markers and for a kernel panic; enforces the boot and run time limits.
//!
//! QEMU is driven directly rather than through virtme-ng: the command line
//! is short, we need exact control of the accelerator, `-icount` and the
//! CPU count for the measurement modes, and virtme-ng added ~15 s per boot
//! here and wants extra guest options (OVERLAY_FS, VIRTIO_CONSOLE) that cost
//! cold-build minutes.
//!
//! Modes: `kvm` (only where a probe boot shows hardware speed: nested KVM
//! can be 1000× slower than TCG while `/dev/kvm` opens fine), `tcg`
//! (multi-threaded TCG, wall clock, noisy) and `tcg-icount` (one vCPU, guest
//! time = instructions executed: deterministic).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchperf_common::run::{MeasurementMode, RunResult};

use crate::Error;
use crate::kernel::boot::guest_protocol::{
    DONE_MARKER, GuestReport, REPORT_FILE, RUN_MARKER, UP_MARKER,
};
use crate::proc::{Cmd, Event, Flow, Tail};

/// The QEMU binary.
pub const QEMU: &str = "qemu-system-x86_64";

/// QEMU's minimal firmware (Debian's qemu-system-data ships it): used
/// when present.
pub const QBOOT: &str = "/usr/share/qemu/qboot.rom";

/// Guest memory in MiB: workloads keep a few files on a tmpfs.
pub const GUEST_MEMORY_MB: u32 = 1024;

/// Console lines kept for failure reports.
const CONSOLE_TAIL: usize = 200;

/// After a panic line, how long to keep reading the trace that follows.
const PANIC_GRACE: Duration = Duration::from_secs(3);

/// Everything one boot needs.
#[derive(Debug, Clone)]
pub struct BootSpec {
    /// The bzImage.
    pub image: PathBuf,
    /// The host directory the guest mounts as `out` (holds the request).
    pub out_dir: PathBuf,
    /// The runner binary, run by the guest as init (through the 9p root, so
    /// it must be an absolute path on the host).
    pub runner: PathBuf,
    /// `kvm`, `tcg` or `tcg-icount`.
    pub mode: MeasurementMode,
    /// Virtual CPUs (`tcg-icount` always uses 1: icount with more hangs).
    pub smp: u32,
    /// From QEMU's start until the guest's init says it is up.
    pub boot_limit: Duration,
    /// From the guest being up until it powers off.
    pub run_limit: Duration,
    /// Extra kernel parameters, after ours (a later `init=` wins).
    pub extra_cmdline: Vec<String>,
}

/// A boot that ran to the end.
#[derive(Debug)]
pub struct Booted {
    /// Seconds from starting QEMU to the guest's init running.
    pub boot_seconds: f64,
    /// Seconds the guest then ran.
    pub run_seconds: f64,
    /// What the guest reported.
    pub report: GuestReport,
    /// The results, in run order.
    pub results: Vec<RunResult>,
    /// The end of the console.
    pub console: Tail,
}

/// Why a boot did not give results; each maps to one failure reason.
#[derive(Debug)]
pub enum BootError {
    /// The console showed `Kernel panic - not syncing`; the panic line and
    /// what followed.
    Panic {
        /// The panic text.
        text: String,
        /// The end of the console.
        console: Tail,
    },
    /// The guest's init did not come up within the boot limit.
    BootTimeout {
        /// The end of the console.
        console: Tail,
    },
    /// The guest did not power off within the run limit.
    RunTimeout {
        /// Runs the guest had started.
        runs_started: usize,
        /// The end of the console.
        console: Tail,
    },
    /// QEMU exited before the guest's init ran.
    BootFailed {
        /// What went wrong.
        detail: String,
        /// The end of the console.
        console: Tail,
    },
    /// The guest ran and powered off but left no results.
    NoResults {
        /// Why, as far as the guest said.
        detail: String,
        /// The end of the console.
        console: Tail,
    },
    /// The job was cancelled (or Ctrl-C) during the boot.
    Cancelled,
    /// The host failed (QEMU missing, the share unreadable).
    Machine(Error),
}

impl From<Error> for BootError {
    fn from(e: Error) -> Self {
        match e {
            Error::Interrupted => BootError::Cancelled,
            e => BootError::Machine(e),
        }
    }
}

/// Kernel parameters of a benchmark guest: console on ttyS0, the host's
/// root over 9p read-only, the runner as init with `guest` as its argument.
pub fn kernel_cmdline(runner: &Path, mode: MeasurementMode, extra: &[String]) -> String {
    let mut p = vec![
        "console=ttyS0".to_string(),
        "root=root".to_string(),
        "rootfstype=9p".to_string(),
        "rootflags=trans=virtio,version=9p2000.L,msize=262144".to_string(),
        "ro".to_string(),
        format!("init={}", runner.display()),
        // Reboot at once on a panic; with -no-reboot QEMU then exits.
        "panic=-1".to_string(),
        // Parameters the kernel does not know are handed to init as
        // arguments, so only ones it knows go here (the benchmark config has
        // no KASLR, hence no `nokaslr`).
        "quiet".to_string(),
        // No PS/2 mouse probe: the root is mounted only after probing ends,
        // and the probe waits 0.9 s of guest time (real time under tcg and
        // kvm) for a mouse no benchmark uses.
        "i8042.noaux".to_string(),
    ];
    if mode == MeasurementMode::TcgIcount {
        // Under icount every instruction a busy-wait spins costs host time,
        // while idle waits cost none. The boot's two busy-waits are the
        // local APIC timer calibration (~0.1 s of guest time, 10–15 s of
        // wall time here; TCG has no TSC-deadline timer to skip it) and the
        // IO-APIC timer check. With one CPU the global clock event device
        // (HPET) ticks instead of the local APIC timer, on both sides of a
        // comparison alike.
        p.push("noapictimer".to_string());
        p.push("no_timer_check".to_string());
    }
    p.extend(extra.iter().cloned());
    // Everything after `--` is passed to init as its arguments.
    p.push("--".to_string());
    p.push("guest".to_string());
    p.join(" ")
}

/// QEMU's arguments for a boot.
pub fn qemu_args(spec: &BootSpec) -> Result<Vec<String>, Error> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |s: &str| a.push(s.to_string());
    match spec.mode {
        MeasurementMode::Kvm => {
            push("-accel");
            push("kvm");
            // -cpu host aborts on MSR 0x10a (IA32_ARCH_CAPABILITIES) on
            // some nested hosts; the guest does not need it.
            push("-cpu");
            push("host,-arch-capabilities");
            push("-smp");
            push(&spec.smp.max(1).to_string());
        }
        MeasurementMode::Tcg => {
            push("-accel");
            push("tcg,thread=multi");
            push("-cpu");
            push("max");
            push("-smp");
            push(&spec.smp.max(1).to_string());
        }
        MeasurementMode::TcgIcount => {
            push("-accel");
            push("tcg");
            push("-cpu");
            push("max");
            // One instruction = 1 ns of guest time, and no sleeping to
            // catch up with the host clock: a deterministic clock.
            push("-icount");
            push("shift=0,sleep=off");
            push("-smp");
            push("1");
        }
        other => {
            return Err(Error::Usage(format!(
                "{} is not a QEMU boot mode",
                other.as_str()
            )));
        }
    }
    for s in [
        "-m",
        &GUEST_MEMORY_MB.to_string(),
        "-machine",
        "q35",
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        "stdio",
        "-monitor",
        "none",
    ] {
        push(s);
    }
    if Path::new(QBOOT).is_file() {
        // qboot instead of SeaBIOS: the firmware only has to hand over to
        // the kernel, which it does in a fraction of the time (3 s less per
        // boot under TCG here).
        push("-bios");
        push(QBOOT);
    }
    push("-kernel");
    push(&path_arg(&spec.image)?);
    push("-virtfs");
    push("local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap");
    push("-virtfs");
    push(&format!(
        "local,path={},mount_tag={},security_model=none,multidevs=remap",
        path_arg(&spec.out_dir)?,
        crate::kernel::boot::guest_protocol::OUT_TAG
    ));
    push("-append");
    push(&kernel_cmdline(
        &spec.runner,
        spec.mode,
        &spec.extra_cmdline,
    ));
    Ok(a)
}

/// A path QEMU's comma-separated options can carry.
fn path_arg(p: &Path) -> Result<String, Error> {
    let s = p
        .to_str()
        .ok_or_else(|| Error::Usage(format!("{} is not UTF-8", p.display())))?;
    if !p.is_absolute() || s.contains([',', ' ', '\n']) {
        return Err(Error::Usage(format!(
            "{s}: QEMU needs an absolute path without commas or spaces"
        )));
    }
    Ok(s.to_string())
}

/// What the console watcher saw.
#[derive(Debug, Default)]
struct Console {
    up_at: Option<Duration>,
    runs_started: usize,
    done: bool,
    panic: Option<(Instant, Vec<String>)>,
    timeout: Option<bool>,
    cancelled: bool,
}

/// Boots `spec`, calling `on_line` with each console line (it may return
/// [`Flow::Stop`] to cancel), and collects the guest's results.
pub fn boot(
    spec: &BootSpec,
    on_line: &mut dyn FnMut(Event<'_>) -> Flow,
) -> Result<Booted, BootError> {
    if !spec.runner.is_absolute() || !spec.runner.is_file() {
        return Err(BootError::Machine(Error::Usage(format!(
            "runner binary {} is not an absolute path to a file",
            spec.runner.display()
        ))));
    }
    let args = qemu_args(spec)?;
    let cmd = Cmd::new(QEMU).args(&args).tail_lines(CONSOLE_TAIL);
    let started = Instant::now();
    let mut seen = Console::default();
    let out = cmd.watch(&mut |ev| {
        let now = started.elapsed();
        if let Event::Line(line) = ev {
            if let Some((_, text)) = &mut seen.panic {
                if text.len() < 60 {
                    text.push(line.to_string());
                }
            } else if line.contains("Kernel panic - not syncing") {
                seen.panic = Some((Instant::now(), vec![line.to_string()]));
            } else if line.contains(UP_MARKER) && seen.up_at.is_none() {
                seen.up_at = Some(now);
            } else if line.contains(RUN_MARKER) {
                seen.runs_started += 1;
            } else if line.contains(DONE_MARKER) {
                seen.done = true;
            }
        }
        if on_line(ev) == Flow::Stop {
            seen.cancelled = true;
            return Flow::Stop;
        }
        if let Some((at, _)) = &seen.panic {
            return if at.elapsed() > PANIC_GRACE {
                Flow::Stop
            } else {
                Flow::Continue
            };
        }
        match seen.up_at {
            None if now > spec.boot_limit => {
                seen.timeout = Some(false);
                Flow::Stop
            }
            Some(up) if now.saturating_sub(up) > spec.run_limit => {
                seen.timeout = Some(true);
                Flow::Stop
            }
            _ => Flow::Continue,
        }
    })?;
    let console = out.tail;
    if seen.cancelled {
        return Err(BootError::Cancelled);
    }
    if let Some((_, text)) = seen.panic {
        return Err(BootError::Panic {
            text: text.join("\n"),
            console,
        });
    }
    match seen.timeout {
        Some(false) => return Err(BootError::BootTimeout { console }),
        Some(true) => {
            return Err(BootError::RunTimeout {
                runs_started: seen.runs_started,
                console,
            });
        }
        None => {}
    }
    let Some(up_at) = seen.up_at else {
        let status = out
            .status
            .map(crate::proc::describe_status)
            .unwrap_or_default();
        return Err(BootError::BootFailed {
            detail: format!("QEMU exited ({status}) before the guest's init ran"),
            console,
        });
    };
    let run_seconds = started.elapsed().saturating_sub(up_at).as_secs_f64();
    let (report, results) = match collect(&spec.out_dir) {
        Ok(r) => r,
        Err(detail) => return Err(BootError::NoResults { detail, console }),
    };
    if results.is_empty() {
        let mut detail = String::from("the guest wrote no results");
        if !report.errors.is_empty() {
            detail.push_str(": ");
            detail.push_str(&report.errors.join("; "));
        }
        return Err(BootError::NoResults { detail, console });
    }
    Ok(Booted {
        boot_seconds: up_at.as_secs_f64(),
        run_seconds,
        report,
        results,
        console,
    })
}

/// Collect step: reads the guest's report and results from the share
/// (also used for the results a kexec'd kernel left on disk).
pub fn collect(out_dir: &Path) -> Result<(GuestReport, Vec<RunResult>), String> {
    let path = out_dir.join(REPORT_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|_| "the guest wrote no report (its driver did not start?)".to_string())?;
    let report: GuestReport =
        serde_json::from_str(&text).map_err(|e| format!("unreadable guest report: {e}"))?;
    let mut results = Vec::new();
    for name in &report.results {
        let p = out_dir.join(name);
        let text = std::fs::read_to_string(&p).map_err(|e| format!("reading {name}: {e}"))?;
        let r: RunResult = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
        results.push(r);
    }
    Ok((report, results))
}

/// Whether KVM guests run at hardware speed here. `/dev/kvm` opening is not
/// enough (nested KVM on some VMs is 1000× slower than TCG): boot `image`
/// with KVM and `init=/nonexistent` and time how long the kernel takes to
/// reach the resulting panic. Real KVM gets there in about a second.
pub fn probe_kvm(image: &Path) -> (bool, String) {
    const PROBE_LIMIT: Duration = Duration::from_secs(8);
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return (false, "/dev/kvm cannot be opened".to_string());
    }
    let spec = BootSpec {
        image: image.to_path_buf(),
        out_dir: PathBuf::from("/nonexistent-patchperf-probe"),
        runner: PathBuf::from("/nonexistent"),
        mode: MeasurementMode::Kvm,
        smp: 1,
        boot_limit: PROBE_LIMIT,
        run_limit: PROBE_LIMIT,
        extra_cmdline: vec![],
    };
    let mut args = match qemu_args(&BootSpec {
        out_dir: std::env::temp_dir(),
        ..spec
    }) {
        Ok(a) => a,
        Err(e) => return (false, e.to_string()),
    };
    // Drop the shares: the probe only needs the kernel to run to its panic.
    let mut i = 0;
    while i < args.len() {
        if args[i] == "-virtfs" {
            args.drain(i..i + 2);
        } else {
            i += 1;
        }
    }
    let started = Instant::now();
    let mut panicked = false;
    let out = Cmd::new(QEMU)
        .args(&args)
        .timeout(PROBE_LIMIT)
        .watch(&mut |ev| match ev {
            Event::Line(l) if l.contains("Kernel panic") => {
                panicked = true;
                Flow::Stop
            }
            _ => Flow::Continue,
        });
    let took = started.elapsed().as_secs_f64();
    match out {
        Ok(_) if panicked => (true, format!("probe boot reached init in {took:.1} s")),
        Ok(o) => (
            false,
            format!("probe boot ended without reaching init: {}", o.tail.last(3)),
        ),
        Err(Error::ProcessTimedOut { .. }) => (
            false,
            format!(
                "probe boot took over {} s: KVM is too slow here (nested?)",
                PROBE_LIMIT.as_secs()
            ),
        ),
        Err(e) => (false, format!("probe boot failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mode: MeasurementMode) -> BootSpec {
        BootSpec {
            image: PathBuf::from("/c/kernels/k/bzImage"),
            out_dir: PathBuf::from("/c/work/job-1/boot-0"),
            runner: PathBuf::from("/usr/local/bin/patchperf-runner"),
            mode,
            smp: 2,
            boot_limit: Duration::from_secs(60),
            run_limit: Duration::from_secs(60),
            extra_cmdline: vec![],
        }
    }

    #[test]
    fn icount_mode_is_single_cpu_tcg_with_a_deterministic_clock() {
        let a = qemu_args(&spec(MeasurementMode::TcgIcount))
            .unwrap()
            .join(" ");
        assert!(
            a.starts_with(
                "-accel tcg -cpu max -icount shift=0,sleep=off -smp 1 -m 1024 -machine q35"
            ),
            "{a}"
        );
        assert!(a.contains("-kernel /c/kernels/k/bzImage"));
        assert!(a.contains(
            "-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap"
        ));
        assert!(a.contains(
            "-virtfs local,path=/c/work/job-1/boot-0,mount_tag=out,security_model=none,multidevs=remap"
        ));
    }

    #[test]
    fn tcg_and_kvm_modes_use_the_requested_cpus() {
        let tcg = qemu_args(&spec(MeasurementMode::Tcg)).unwrap().join(" ");
        assert!(
            tcg.starts_with("-accel tcg,thread=multi -cpu max -smp 2 "),
            "{tcg}"
        );
        let kvm = qemu_args(&spec(MeasurementMode::Kvm)).unwrap().join(" ");
        assert!(
            kvm.starts_with("-accel kvm -cpu host,-arch-capabilities -smp 2 "),
            "{kvm}"
        );
        assert!(qemu_args(&spec(MeasurementMode::Kexec)).is_err());
        assert!(qemu_args(&spec(MeasurementMode::Host)).is_err());
    }

    #[test]
    fn the_runner_is_init_and_extra_parameters_come_before_its_arguments() {
        let line = kernel_cmdline(
            Path::new("/usr/local/bin/patchperf-runner"),
            MeasurementMode::Tcg,
            &["init=/nonexistent".to_string()],
        );
        assert_eq!(
            line,
            "console=ttyS0 root=root rootfstype=9p \
             rootflags=trans=virtio,version=9p2000.L,msize=262144 ro \
             init=/usr/local/bin/patchperf-runner panic=-1 quiet i8042.noaux init=/nonexistent -- guest"
        );
        let icount = kernel_cmdline(
            Path::new("/usr/local/bin/patchperf-runner"),
            MeasurementMode::TcgIcount,
            &[],
        );
        assert!(
            icount.ends_with("panic=-1 quiet i8042.noaux noapictimer no_timer_check -- guest"),
            "{icount}"
        );
    }

    #[test]
    fn paths_qemu_cannot_carry_are_refused() {
        let mut s = spec(MeasurementMode::Tcg);
        s.out_dir = PathBuf::from("/c/work/a,b");
        assert!(matches!(qemu_args(&s), Err(Error::Usage(_))));
        s.out_dir = PathBuf::from("relative/dir");
        assert!(matches!(qemu_args(&s), Err(Error::Usage(_))));
    }
}
