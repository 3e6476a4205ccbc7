//! Whether perf can be used here, and how: finds the `perf` binary, checks
//! that this process may count system-wide, and probes whether the CPU has a
//! PMU that counts `cycles` (bare metal) or not (most VMs, QEMU TCG). Reads
//! only what the running kernel itself exposes (`/proc`), so the same checks
//! give the right answer inside a booted benchmark guest.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::exec;
use super::stat::parse::{Reading, parse_totals};
use crate::error::PerfError;

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";
const KALLSYMS: &str = "/proc/kallsyms";

/// `CAP_SYS_ADMIN`: bypasses perf_event_paranoid (and kptr_restrict).
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON` (Linux 5.8+): bypasses perf_event_paranoid.
const CAP_PERFMON: u32 = 38;

/// A usable perf and what the machine can count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Perf {
    /// The perf executable.
    pub program: PathBuf,
}

/// How long the PMU probe may take. It is the first perf a booted guest
/// runs, so perf itself is read from the host over 9p first; under
/// tcg-icount with `sleep=off` the guest's clock jumps ahead while it
/// waits for those reads, and on a busy host 30 s of guest time ran out
/// before perf started (the profile of most boots was lost at load 12–18).
const PROBE_LIMIT: Duration = Duration::from_secs(300);

impl Perf {
    /// Finds perf (`program` as given, or on `PATH` when it has no slash) and
    /// checks that system-wide counting is allowed. The error is the one
    /// warning to show when perf cannot be used.
    pub fn detect(program: &Path) -> Result<Self, PerfError> {
        let program = locate(program).ok_or_else(|| {
            PerfError::Unavailable(format!(
                "perf not found (`{}`): install linux-perf (Debian) to get perf-stat and \
                 perf-profile metrics",
                program.display()
            ))
        })?;
        let paranoid = std::fs::read_to_string(PARANOID).ok();
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        check_access(paranoid.as_deref(), &status)?;
        Ok(Self { program })
    }

    /// A `Command` for this perf.
    pub fn command(&self) -> Command {
        Command::new(&self.program)
    }

    /// Whether the PMU counts `cycles` here: runs `perf stat -e cycles true`
    /// in `dir` and reads the answer.
    pub fn counts_cycles(&self, dir: &Path) -> Result<bool, PerfError> {
        let output = dir.join("probe.csv");
        let stderr = dir.join("probe.stderr");
        let mut command = self.command();
        command
            .args(["stat", "-x,", "-e", "cycles", "-o"])
            .arg(&output)
            .args(["--", "true"]);
        exec::run(
            command,
            "perf stat (PMU probe)",
            &dir.join("probe.stdout"),
            &stderr,
            PROBE_LIMIT,
        )?;
        let text = std::fs::read_to_string(&output)
            .map_err(|err| PerfError::io(format!("cannot read {}", output.display()), err))?;
        let readings = parse_totals(&text).map_err(|err| PerfError::output(err, String::new()))?;
        Ok(readings.iter().any(|(event, reading)| {
            event == "cycles" && matches!(reading, Reading::Counted { .. })
        }))
    }
}

/// Where the executable is: `program` itself when it names a path, else the
/// first match on `PATH`.
fn locate(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return is_executable(program).then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Decides from `/proc/sys/kernel/perf_event_paranoid` (absent when the
/// kernel has no perf events) and `/proc/self/status` whether this process
/// may open system-wide (`-a`) counters. The kernel allows that to
/// CAP_PERFMON or CAP_SYS_ADMIN holders, and to everyone when paranoid ≤ 0.
pub fn check_access(paranoid: Option<&str>, proc_status: &str) -> Result<(), PerfError> {
    let Some(paranoid) = paranoid else {
        return Err(PerfError::Unavailable(format!(
            "this kernel has no perf events ({PARANOID} is missing): no perf-stat or \
             perf-profile metrics"
        )));
    };
    let level: i32 = paranoid.trim().parse().map_err(|_| {
        PerfError::Unavailable(format!("cannot read {PARANOID} (`{}`)", paranoid.trim()))
    })?;
    if level <= 0
        || has_capability(proc_status, CAP_PERFMON)
        || has_capability(proc_status, CAP_SYS_ADMIN)
    {
        return Ok(());
    }
    Err(PerfError::Unavailable(format!(
        "perf_event_paranoid is {level} and this process has neither CAP_PERFMON nor \
         CAP_SYS_ADMIN, so perf cannot count system-wide: run as root or \
         `sysctl kernel.perf_event_paranoid=0` to get perf-stat and perf-profile metrics"
    )))
}

/// Whether `CapEff` in a `/proc/<pid>/status` text has capability `bit`.
fn has_capability(proc_status: &str, bit: u32) -> bool {
    proc_status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1u64 << bit) != 0)
}

/// A warning when kernel symbols are hidden from us (`/proc/kallsyms` shows
/// zero addresses under kptr_restrict), so a profile cannot name kernel
/// functions; `None` when they are readable or kallsyms is not there.
pub fn kernel_symbols_warning() -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(KALLSYMS).ok()?;
    let lines = std::io::BufReader::new(file).lines().map_while(Result::ok);
    kallsyms_hidden(lines).then(|| {
        "kernel symbols are hidden (/proc/kallsyms shows zero addresses; see \
         kernel.kptr_restrict): perf-profile cannot name kernel functions"
            .to_string()
    })
}

/// Whether `/proc/kallsyms` lines have their addresses zeroed out. Per-CPU
/// symbols legitimately sit at address 0 (Linux 6.1 lists them first), so
/// the answer comes from the first function (`T`/`t`) symbol.
pub fn kallsyms_hidden(lines: impl IntoIterator<Item = impl AsRef<str>>) -> bool {
    for line in lines {
        let mut fields = line.as_ref().split_whitespace();
        let (Some(address), Some(kind)) = (fields.next(), fields.next()) else {
            continue;
        };
        if kind.eq_ignore_ascii_case("t") {
            return address.bytes().all(|b| b == b'0');
        }
    }
    false
}
