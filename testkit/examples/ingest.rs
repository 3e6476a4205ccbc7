//! The ingest benchmark's client (run by `bench/ingest.sh`, which starts
//! the server): uploaders that do nothing but take jobs and upload runs as
//! large as a lab's (~250 scalar metrics and 15 per-second series each), to
//! measure how many metric values a second the server stores and what CPU
//! each costs the server and Postgres.
//!
//! For each uploader count asked for (`--uploaders 1,8`) it runs one phase
//! of `--seconds`: every uploader registers its own machine, then loops:
//! claim a job (when there is none, submit a comparison pinned to its
//! machine with the CI token and claim again), upload every run of each of
//! the job's boots, finish. No pauses: this measures the server at full
//! tilt. The CPU comes from /proc: the server's process, and the Postgres
//! postmaster with all its children.
//!
//! usage: ingest URL CI_TOKEN RUNNER_TOKEN --server-pid PID --postgres-pid PID
//!        [--uploaders 1,8] [--seconds S] [--bare]
//!
//! `--bare` uploads runs of two metrics and one series instead: what an
//! upload costs apart from its values, i.e. what batching several runs in
//! one request could save at most.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use patchperf_common::protocol::{
    ATTEMPT_HEADER, BootSlot, ClaimRequest, FinishRequest, JobSpec, MACHINE_HEADER,
    RegisterRequest, RunUpload,
};
use patchperf_common::run::{MetricValue, RunResult, Series, Side};
use serde_json::{Value, json};

/// Measured seconds of every run, hence the points of each series.
const RUN_SECONDS: u32 = 30;
/// Task counts each boot runs the workload at: one run each.
const NR_TASKS: [u32; 3] = [1, 2, 4];

/// What the command line asked for.
struct Options {
    url: String,
    ci_token: String,
    runner_token: String,
    server_pid: u32,
    postgres_pid: u32,
    uploaders: Vec<usize>,
    seconds: u64,
    bare: bool,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let (mut server_pid, mut postgres_pid) = (0, 0);
    let mut uploaders = vec![1, 8];
    let mut seconds = 20;
    let mut bare = false;
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server-pid" => server_pid = value()?.parse().map_err(|_| "bad --server-pid")?,
            "--postgres-pid" => {
                postgres_pid = value()?.parse().map_err(|_| "bad --postgres-pid")?;
            }
            "--seconds" => seconds = value()?.parse().map_err(|_| "bad --seconds")?,
            "--bare" => bare = true,
            "--uploaders" => {
                uploaders = value()?
                    .split(',')
                    .map(|n| n.parse().ok().filter(|&n| n > 0))
                    .collect::<Option<_>>()
                    .ok_or("--uploaders takes counts like 1,8")?;
            }
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => positional.push(a),
        }
    }
    let [url, ci_token, runner_token] = <[String; 3]>::try_from(positional)
        .map_err(|_| "usage: ingest URL CI_TOKEN RUNNER_TOKEN --server-pid PID --postgres-pid PID [--uploaders 1,8] [--seconds S] [--bare]".to_string())?;
    if server_pid == 0 || postgres_pid == 0 {
        return Err("--server-pid and --postgres-pid are required".into());
    }
    if !(1..=600).contains(&seconds) {
        return Err("--seconds must be 1 to 600".into());
    }
    Ok(Options {
        url: url.trim_end_matches('/').to_string(),
        ci_token,
        runner_token,
        server_pid,
        postgres_pid,
        uploaders,
        seconds,
        bare,
    })
}

/// CPU ticks (user + system, with waited-for children) of a process.
fn ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the parenthesised command: state is field 3, utime,
    // stime, cutime and cstime are fields 14 to 17.
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return 0;
    };
    rest.split(' ')
        .skip(11)
        .take(4)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum()
}

/// Ticks of `pid` and of its direct children (Postgres's backends).
fn tree_ticks(pid: u32) -> u64 {
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    ticks(pid)
        + children
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .map(ticks)
            .sum::<u64>()
}

/// An HTTP client of one uploader.
struct Client {
    http: ureq::Agent,
    base: String,
}

impl Client {
    fn new(base: &str) -> Client {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Client {
            http,
            base: base.to_string(),
        }
    }

    /// A POST; the status and the body as JSON (Null when there is none).
    fn post(
        &self,
        path: &str,
        token: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<(u16, Value), String> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("authorization", &format!("Bearer {token}"));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let mut r = req.send_json(body).map_err(|e| format!("{path}: {e}"))?;
        let status = r.status().as_u16();
        let text = r
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("{path}: {e}"))?;
        if !(200..300).contains(&status) {
            return Err(format!("{path}: {status} {text:.300}"));
        }
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }
}

/// What all uploaders of a phase stored.
#[derive(Default)]
struct Counts {
    runs: AtomicU64,
    values: AtomicU64,
    points: AtomicU64,
    upload_micros: AtomicU64,
}

/// One uploader until `deadline`.
fn uploader(o: &Options, name: &str, deadline: Instant, counts: &Counts) -> Result<(), String> {
    let c = Client::new(&o.url);
    let token = o.runner_token.as_str();
    let register = serde_json::to_value(RegisterRequest {
        name: name.to_string(),
        inventory: patchperf_testkit::machine::inventory(name),
        protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
    })
    .map_err(|e| e.to_string())?;
    let (_, answer) = c.post("/api/v1/runner/register", token, &[], &register)?;
    let machine_id = answer["machine_id"].as_i64().ok_or("no machine_id")?;
    let mut submitted = 0;
    while Instant::now() < deadline {
        let claim = serde_json::to_value(ClaimRequest {
            machine_id,
            wait_seconds: 0,
        })
        .map_err(|e| e.to_string())?;
        let (status, spec) = c.post("/api/v1/jobs/claim", token, &[], &claim)?;
        if status == 204 {
            submitted += 1;
            let body = json!({
                "base": { "kind": "tarball", "name": "linux-source-6.1" },
                "mbox": patchperf_testkit::mbox::one_patch(
                    &format!("[PATCH] mm: ingest test {name}.{submitted}")),
                "workloads": ["dup1"],
                "params": { "nr_task": NR_TASKS, "seconds": RUN_SECONDS, "warmup_seconds": 1 },
                "runs": 3,
                "backend": "tcg-icount",
                "machine": name,
            });
            c.post("/api/v1/comparisons", &o.ci_token, &[], &body)?;
            continue;
        }
        let spec: JobSpec = serde_json::from_value(spec).map_err(|e| e.to_string())?;
        let headers = [
            (MACHINE_HEADER, machine_id.to_string()),
            (ATTEMPT_HEADER, spec.attempt.to_string()),
        ];
        let path = |action: &str| format!("/api/v1/jobs/{}/{action}", spec.job_id);
        for boot in &spec.boots {
            for nr_task in NR_TASKS {
                let result = run(*boot, nr_task, o.bare);
                let (values, points) = (
                    result.metrics.len() as u64,
                    result.series.iter().map(|s| s.points.len() as u64).sum(),
                );
                let upload = serde_json::to_value(RunUpload {
                    boot: *boot,
                    result,
                })
                .map_err(|e| e.to_string())?;
                let start = Instant::now();
                c.post(&path("runs"), token, &headers, &upload)?;
                let took = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                counts.upload_micros.fetch_add(took, Ordering::Relaxed);
                counts.runs.fetch_add(1, Ordering::Relaxed);
                counts.values.fetch_add(values, Ordering::Relaxed);
                counts.points.fetch_add(points, Ordering::Relaxed);
            }
        }
        let finish = serde_json::to_value(FinishRequest::Done {
            log_tail: "guest powered off\n".into(),
        })
        .map_err(|e| e.to_string())?;
        c.post(&path("finish"), token, &headers, &finish)?;
    }
    Ok(())
}

/// A dup1 run as a lab machine's: will-it-scale, 40 perf-stat and 208
/// perf-profile metrics, 15 per-second series of `RUN_SECONDS` points;
/// `bare`: the test kit's run alone (2 metrics, 1 series).
fn run(boot: BootSlot, nr_task: u32, bare: bool) -> RunResult {
    let side = match boot.side {
        Side::Base => 1.0,
        Side::Patched => 1.02,
    };
    let wobble = |k: u32| 1.0 + 0.001 * f64::from((boot.seq * 7 + k) % 11);
    let ops = 100_000.0 * side * wobble(nr_task);
    let per_second: Vec<f64> = (0..RUN_SECONDS)
        .map(|s| ops * f64::from(nr_task) * wobble(s))
        .collect();
    let mut run = patchperf_testkit::runs::run_result("dup1", nr_task, per_second, ops);
    if bare {
        return run;
    }
    run.metrics.extend((0..40).map(|k| MetricValue {
        name: format!("perf-stat.ps.event_{k}"),
        value: 1e9 * wobble(k) * f64::from(k + 1),
    }));
    run.metrics.extend((0..208).map(|k| MetricValue {
        name: format!("perf-profile.children.cycles-pp.kernel_function_{k}"),
        value: 0.05 * f64::from(k % 50 + 1) * wobble(k),
    }));
    run.series.extend((0..14).map(|k| {
        Series {
            name: format!("perf-stat.ps.event_{k}"),
            interval_seconds: 1.0,
            points: (0..RUN_SECONDS)
                .map(|s| 1e9 * wobble(s + k) * f64::from(k + 1))
                .collect(),
        }
    }));
    run.profile_event = Some("cpu-clock".into());
    run.warnings = vec!["perf: no hardware counters in the guest; cpu-clock sampled".into()];
    run
}

/// One phase with `n` uploaders; prints its line.
fn phase(o: &Options, n: usize) -> Result<(), String> {
    let counts = Counts::default();
    let hz = 100.0; // USER_HZ: what /proc/PID/stat counts in on Linux.
    let (server0, pg0) = (ticks(o.server_pid), tree_ticks(o.postgres_pid));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(o.seconds);
    let errors: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let counts = &counts;
                let name = format!("ingest-{n}-{i}");
                s.spawn(move || uploader(o, &name, deadline, counts))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap_or(Err("uploader panicked".into())).err())
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let server = (ticks(o.server_pid) - server0) as f64 / hz;
    let pg = tree_ticks(o.postgres_pid).saturating_sub(pg0) as f64 / hz;
    let (runs, values, points) = (
        counts.runs.load(Ordering::Relaxed),
        counts.values.load(Ordering::Relaxed),
        counts.points.load(Ordering::Relaxed),
    );
    let per_value = |cpu: f64| cpu * 1e6 / values.max(1) as f64;
    println!(
        "{n:>2} uploaders: {runs} runs, {values} values, {points} series points in {elapsed:.1} s: \
         {:.0} values/s; upload mean {:.1} ms; CPU per value: server {:.1} µs, postgres {:.1} µs, \
         total {:.1} µs",
        values as f64 / elapsed,
        counts.upload_micros.load(Ordering::Relaxed) as f64 / 1000.0 / runs.max(1) as f64,
        per_value(server),
        per_value(pg),
        per_value(server + pg),
    );
    match errors.first() {
        Some(e) => Err(format!("{} uploaders failed; first: {e}", errors.len())),
        None => Ok(()),
    }
}

fn main() {
    let result = options().and_then(|o| o.uploaders.iter().try_for_each(|&n| phase(&o, n)));
    if let Err(e) = result {
        eprintln!("ingest: {e}");
        std::process::exit(1);
    }
}
