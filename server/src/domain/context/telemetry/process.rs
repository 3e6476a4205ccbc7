//! This process as Prometheus' client libraries describe theirs (the
//! `process_*` series every exporter has, without our prefix, so the
//! dashboards and alerts written for them work as they are) and which
//! build it is (`patchperf_build_info`). Read from `/proc/self` at each
//! scrape.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

/// Clock ticks a second in `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const TICKS: f64 = 100.0;

/// Registers `patchperf_build_info` in `prefixed` and the `process_*`
/// series in `plain`.
pub fn register(prefixed: &mut Registry, plain: &mut Registry) {
    prefixed.register(
        "build",
        "The patchperf build this server runs",
        Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
    );
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which may hold spaces and ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    // Numbered as proc(5) numbers them: state is field 3, fields[0] here.
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        let cpu: Counter<f64, AtomicU64> = Counter::default();
        cpu.inc_by((utime + stime) / TICKS);
        plain.register_with_unit(
            "process_cpu",
            "User and system CPU time this process spent",
            Unit::Seconds,
            cpu,
        );
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
    };
    for (name, key, help) in [
        ("process_resident_memory", "VmRSS:", "Resident memory size"),
        ("process_virtual_memory", "VmSize:", "Virtual memory size"),
    ] {
        if let Some(k) = kib(key) {
            let g: Gauge = Gauge::default();
            g.set(k.saturating_mul(1024));
            plain.register_with_unit(name, help, Unit::Bytes, g);
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let g: Gauge = Gauge::default();
        g.set(i64::try_from(fds.count()).unwrap_or(i64::MAX));
        plain.register("process_open_fds", "Open file descriptors", g);
    }
    let uptime = std::fs::read_to_string("/proc/uptime").unwrap_or_default();
    let booted = uptime
        .split_whitespace()
        .next()
        .and_then(|u| u.parse::<f64>().ok())
        .map(|up| chrono::Utc::now().timestamp() as f64 - up);
    if let (Some(booted), Some(start)) = (booted, field(22)) {
        let g: Gauge<f64, AtomicU64> = Gauge::default();
        g.set(booted + start / TICKS);
        plain.register_with_unit(
            "process_start_time",
            "When this process started, seconds since the epoch",
            Unit::Seconds,
            g,
        );
    }
}
