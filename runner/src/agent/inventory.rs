//! What this machine is, as the server's machine page and report headers
//! show it: read from /proc and uname, plus simple, honest probes of KVM
//! and the PMU. A probe that cannot decide says "no" and leaves a note
//! saying why, so a report never claims hardware speed it did not see.

use std::path::Path;

use patchperf_common::protocol::MachineInventory;
use patchperf_common::run::MeasurementMode;

use crate::kernel::boot::kvm_probe::KvmProbeFile;
use crate::kernel::cache::Cache;
use crate::perf::env::Perf;

/// Collects the inventory of the running machine.
pub fn collect() -> MachineInventory {
    let mut notes = Vec::new();
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let (kvm_usable, kvm_note) = probe_kvm();
    notes.push(kvm_note);
    let (pmu_usable, pmu_note) = probe_pmu();
    notes.push(pmu_note);
    let qemu = which("qemu-system-x86_64");
    let mut backends = Vec::new();
    if kvm_usable {
        backends.push(MeasurementMode::Kvm);
    }
    if qemu {
        backends.extend([MeasurementMode::TcgIcount, MeasurementMode::Tcg]);
    } else {
        notes.push("qemu-system-x86_64 not found: no boot backend".to_string());
    }
    MachineInventory {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        cpu_model: cpu_model(&cpuinfo),
        nr_cpu: std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
        memory_bytes: mem_total_bytes(&meminfo),
        kernel_release: read("/proc/sys/kernel/osrelease").trim().to_string(),
        arch: std::env::consts::ARCH.to_string(),
        kvm_usable,
        pmu_usable,
        backends,
        notes,
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `model name` of the first CPU in /proc/cpuinfo (x86), or the first of
/// the fields other architectures use.
pub fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Model", "cpu model", "Processor"] {
        let value = cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        });
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            return v;
        }
    }
    "unknown".to_string()
}

/// `MemTotal` from /proc/meminfo, in bytes.
pub fn mem_total_bytes(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix("MemTotal:")?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0)
}

/// KVM counts as usable only when the kernel pipeline's probe boot proved
/// it fast during this host boot (its verdict is cached under the pipeline
/// cache); `/dev/kvm` merely opening is not enough, nested KVM can be 1000×
/// slower than TCG.
fn probe_kvm() -> (bool, String) {
    if let Some(verdict) = KvmProbeFile::of(&Cache::from_env()).read() {
        let answer = if verdict.usable { "yes" } else { "no" };
        return (
            verdict.usable,
            format!("kvm: probe boot said {answer}: {}", verdict.why),
        );
    }
    let opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let note = if opens {
        "kvm: /dev/kvm opens but no probe boot has shown it fast yet; counted as unusable"
    } else {
        "kvm: /dev/kvm cannot be opened"
    };
    (false, note.to_string())
}

/// Whether `perf stat -e cycles` counts here.
fn probe_pmu() -> (bool, String) {
    let perf = match Perf::detect(Path::new("perf")) {
        Ok(perf) => perf,
        Err(why) => return (false, format!("pmu: {why}")),
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            return (
                false,
                format!("pmu: no temporary directory for the probe: {e}"),
            );
        }
    };
    match perf.counts_cycles(dir.path()) {
        Ok(true) => (true, "pmu: perf stat counts cycles".to_string()),
        Ok(false) => (
            false,
            "pmu: cycles <not supported> (no hardware PMU here)".to_string(),
        ),
        Err(why) => (false, format!("pmu: probe failed: {why}")),
    }
}

fn which(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_cpu_model_and_memory_as_proc_prints_them() {
        // Lines as an x86 /proc/cpuinfo and /proc/meminfo print them.
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
        assert_eq!(cpu_model(cpuinfo), "Intel(R) Xeon(R) Platinum 8480+");
        assert_eq!(cpu_model(""), "unknown");
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total_bytes(meminfo), 24_576_000 * 1024);
    }

    #[test]
    fn the_running_machine_has_a_plausible_inventory() {
        let inv = collect();
        assert!(inv.nr_cpu >= 1);
        assert!(inv.memory_bytes > 0);
        assert!(!inv.kernel_release.is_empty());
        assert!(inv.notes.iter().any(|n| n.starts_with("kvm:")));
        assert!(inv.notes.iter().any(|n| n.starts_with("pmu:")));
    }
}
