//! The benchmark's answer: what was measured, beside the target for
//! it and their ratio (measured ÷ target; a value ≤ 1 meets a "≤" target,
//! ≥ 1 a "≥" one).

use std::time::Duration;

use crate::aa_probe::Probe;
use crate::client::{CpuSample, ms, percentile};
use crate::readers::Measured;

/// One ingest phase.
#[derive(Debug, Clone)]
pub struct Ingest {
    pub uploaders: usize,
    pub comparisons: usize,
    pub runs: u64,
    pub values: u64,
    pub points: u64,
    pub seconds: f64,
    pub server_cpu: Duration,
    pub postgres_cpu: Duration,
    /// Sorted upload latencies.
    pub upload_times: Vec<Duration>,
}

/// Server and Postgres CPU over a spell with nothing to do.
#[derive(Debug, Clone)]
pub struct Idle {
    pub seconds: f64,
    pub server: Duration,
    pub postgres: Duration,
}

impl Idle {
    pub fn new(before: &CpuSample, after: &CpuSample) -> Idle {
        Idle {
            seconds: (after.at - before.at).as_secs_f64(),
            server: after.server.saturating_sub(before.server),
            postgres: after.postgres.saturating_sub(before.postgres),
        }
    }
}

/// Everything the tables show.
pub struct Summary<'a> {
    pub ingest: &'a [Ingest],
    pub ingest_target: f64,
    pub idle: &'a Idle,
    pub readers: &'a [Measured],
    pub probe: &'a Probe,
    pub listing_target_ms: f64,
    pub values: u64,
    pub points: u64,
    pub comparisons: usize,
    pub elapsed: Duration,
    pub load_before: &'a str,
    pub load_after: &'a str,
    pub cores: usize,
}

/// Idle CPU below this share of a core counts as nothing.
const IDLE_SHARE: f64 = 0.01;

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

pub fn print(s: &Summary<'_>) {
    println!();
    println!(
        "lab: {} comparisons, {} metric values, {} series points uploaded in {:.0} s",
        s.comparisons,
        s.values,
        s.points,
        s.elapsed.as_secs_f64()
    );
    println!(
        "load average (1, 5, 15 min): before {}, after {}; {} cores",
        s.load_before, s.load_after, s.cores
    );

    println!();
    println!(
        "{:<10} {:>5} {:>6} {:>8} {:>9} {:>6} {:>9} {:>15} {:>16} {:>9} {:>6} {:>7}",
        "ingest",
        "comps",
        "runs",
        "values",
        "points",
        "s",
        "values/s",
        "upload p50/p99",
        "CPU µs/value s+pg",
        "target",
        "ratio",
        ""
    );
    for i in s.ingest {
        let rate = i.values as f64 / i.seconds.max(1e-9);
        let per_value = |d: Duration| d.as_secs_f64() * 1e6 / (i.values.max(1) as f64);
        let target = (i.uploaders == 8).then_some(s.ingest_target);
        println!(
            "{:<10} {:>5} {:>6} {:>8} {:>9} {:>6.1} {:>9.0} {:>7.1}/{:>7.1} {:>7.0}+{:<8.0} {:>9} {:>6} {:>7}",
            format!("{} upl.", i.uploaders),
            i.comparisons,
            i.runs,
            i.values,
            i.points,
            i.seconds,
            rate,
            percentile(&i.upload_times, 50.0),
            percentile(&i.upload_times, 99.0),
            per_value(i.server_cpu),
            per_value(i.postgres_cpu),
            target.map_or("-".into(), |t| format!("≥{t:.0}")),
            target.map_or("-".into(), |t| format!("{:.2}", rate / t)),
            target.map_or("", |t| met(rate >= t)),
        );
    }

    println!();
    println!(
        "{:<34} {:>3} {:>5} {:>4} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8} {:>6} {:>7}",
        "endpoint",
        "cl",
        "req",
        "err",
        "first ms",
        "p50 ms",
        "p99 ms",
        "max ms",
        "CPU-ms",
        "p99 tgt",
        "ratio",
        ""
    );
    for m in s.readers {
        let t = m.p99_target_ms;
        println!(
            "{:<34} {:>3} {:>5} {:>4} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>7.1} {:>8} {:>6} {:>7}",
            m.label,
            m.clients,
            m.requests,
            m.errors,
            opt(m.first_ms),
            m.p50_ms,
            m.p99_ms,
            m.max_ms,
            m.cpu_ms,
            t.map_or("-".into(), |t| format!("≤{t:.0}")),
            t.map_or("-".into(), |t| format!("{:.2}", m.p99_ms / t)),
            t.map_or("", |t| met(m.errors == 0 && m.p99_ms <= t)),
        );
    }

    println!();
    let share = |d: Duration| d.as_secs_f64() / s.idle.seconds.max(1e-9);
    let idle = share(s.idle.server) + share(s.idle.postgres);
    println!(
        "idle {:.0} s after the lab was filled: server {:.1}%, Postgres {:.1}% of a core \
         (target: nothing changed, so < {:.0}%): {}",
        s.idle.seconds,
        100.0 * share(s.idle.server),
        100.0 * share(s.idle.postgres),
        100.0 * IDLE_SHARE,
        met(idle < IDLE_SHARE)
    );
    let p = s.probe;
    println!(
        "A/A probe on {} ({} comparisons; its floor changed {} verdicts):",
        p.machine, p.comparisons, p.changed
    );
    let first = p.first_listing_ms;
    println!(
        "  first ?machine=…&verdict=regression listing after it: {} ms (answered {} ms after \
         the A/A finished); target ≤{:.0} ms, ratio {}: {}",
        opt(first),
        opt(p.first_listing_after_ms),
        s.listing_target_ms,
        first.map_or("-".into(), |f| format!("{:.2}", f / s.listing_target_ms)),
        met(first.is_some_and(|f| f <= s.listing_target_ms))
    );
    println!(
        "  listings show every verdict the comparisons' own pages give: {} ({} polls; {} still \
         differ at the last)",
        p.correct_after.map_or_else(
            || "never while polling".into(),
            |d| format!("{:.0} ms after the A/A finished", ms(d))
        ),
        p.polls,
        p.stale_at_end
    );
}
