//! The load benchmark's client (run by `bench/load.sh`, which starts the
//! server): simulated runners and browsers against a running server for a
//! fixed time, then requests, errors and latency percentiles per kind of
//! request.
//!
//! Each runner registers its own machine, then loops: claim a job (when
//! there is none, submit a comparison pinned to its machine with the CI
//! token, as CI would, and claim again), post a state, heartbeat, upload a
//! dup1 run per boot with a heartbeat after each, finish. Each browser
//! loops over the dashboard, a comparison page, its JSON, its text report
//! and the first runs plot the page links to. Both pause between requests (`--runner-pause-ms`,
//! `--browser-pause-ms`), as a runner busy booting kernels and a person
//! reading pages do; with no pause the benchmark measures only how long a
//! saturated server's queue is.
//!
//! usage: load URL CI_TOKEN RUNNER_TOKEN [--runners N] [--browsers N]
//!        [--seconds S] [--runner-pause-ms MS] [--browser-pause-ms MS]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use patchperf_common::protocol::{
    ATTEMPT_HEADER, BootSlot, ClaimRequest, FinishRequest, JobSpec, JobState, MACHINE_HEADER,
    RegisterRequest, RunUpload, StateUpdate,
};
use patchperf_common::run::Side;
use serde_json::{Value, json};

/// Longest run the benchmark accepts, in seconds.
const MAX_SECONDS: u64 = 600;

/// What the command line asked for.
#[derive(Debug, Clone)]
struct Options {
    url: String,
    ci_token: String,
    runner_token: String,
    runners: usize,
    browsers: usize,
    seconds: u64,
    runner_pause: Duration,
    browser_pause: Duration,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut o = Options {
        url: String::new(),
        ci_token: String::new(),
        runner_token: String::new(),
        runners: 100,
        browsers: 50,
        seconds: 60,
        runner_pause: Duration::from_millis(500),
        browser_pause: Duration::from_millis(500),
    };
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--runners" => o.runners = usize::try_from(number(&a)?).map_err(|e| e.to_string())?,
            "--browsers" => o.browsers = usize::try_from(number(&a)?).map_err(|e| e.to_string())?,
            "--seconds" => o.seconds = number(&a)?,
            "--runner-pause-ms" => o.runner_pause = Duration::from_millis(number(&a)?),
            "--browser-pause-ms" => o.browser_pause = Duration::from_millis(number(&a)?),
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => positional.push(a),
        }
    }
    let [url, ci, runner] = <[String; 3]>::try_from(positional)
        .map_err(|_| "usage: load URL CI_TOKEN RUNNER_TOKEN [options]".to_string())?;
    if !(1..=MAX_SECONDS).contains(&o.seconds) {
        return Err(format!("--seconds must be 1 to {MAX_SECONDS}"));
    }
    o.url = url.trim_end_matches('/').to_string();
    o.ci_token = ci;
    o.runner_token = runner;
    Ok(o)
}

/// Latencies and failures of one kind of request.
#[derive(Debug, Default)]
struct Kind {
    micros: Vec<u64>,
    errors: u64,
}

/// What every simulated client measured, by kind of request.
#[derive(Debug, Default)]
struct Tally {
    kinds: BTreeMap<&'static str, Kind>,
    /// The first few failures, to say what went wrong.
    samples: Vec<String>,
}

impl Tally {
    fn merge(&self, into: &Mutex<Tally>) {
        let mut all = into.lock().unwrap_or_else(|p| p.into_inner());
        for (name, k) in &self.kinds {
            let t = all.kinds.entry(name).or_default();
            t.micros.extend(&k.micros);
            t.errors += k.errors;
        }
        for s in &self.samples {
            if all.samples.len() < 10 {
                all.samples.push(s.clone());
            }
        }
    }
}

/// One simulated client: an HTTP agent with keep-alive and its tally.
struct Client {
    http: ureq::Agent,
    base: String,
    tally: Tally,
}

/// An answer: status and body.
struct Answer {
    status: u16,
    body: String,
}

impl Client {
    fn new(base: &str) -> Client {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Client {
            http,
            base: base.to_string(),
            tally: Tally::default(),
        }
    }

    /// One request, timed and counted under `kind`; `None` on a transport
    /// error or a status other than 2xx.
    fn call(
        &mut self,
        kind: &'static str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, String)],
        body: Option<&Value>,
    ) -> Option<Answer> {
        let url = format!("{}{path}", self.base);
        let start = Instant::now();
        let sent = match body {
            Some(b) => {
                let mut req = self.http.post(&url);
                if let Some(t) = token {
                    req = req.header("authorization", &format!("Bearer {t}"));
                }
                for (k, v) in headers {
                    req = req.header(*k, v);
                }
                req.send_json(b)
            }
            None => self.http.get(&url).call(),
        };
        let answer = sent.and_then(|mut r| {
            let status = r.status().as_u16();
            r.body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_string()
                .map(|body| Answer { status, body })
        });
        let took = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        let k = self.tally.kinds.entry(kind).or_default();
        k.micros.push(took);
        match answer {
            Ok(a) if (200..300).contains(&a.status) => Some(a),
            other => {
                k.errors += 1;
                if self.tally.samples.len() < 10 {
                    self.tally.samples.push(match other {
                        Ok(a) => format!("{kind} {path}: {} {:.200}", a.status, a.body),
                        Err(e) => format!("{kind} {path}: {e}"),
                    });
                }
                None
            }
        }
    }
}

/// A simulated runner until `deadline`.
fn runner(o: &Options, i: usize, deadline: Instant, ids: &Mutex<Vec<i64>>) -> Tally {
    let mut c = Client::new(&o.url);
    let name = format!("load-{i}");
    let register = RegisterRequest {
        name: name.clone(),
        inventory: patchperf_testkit::machine::inventory(&name),
        protocol_version: patchperf_common::protocol::PROTOCOL_VERSION,
    };
    let token = o.runner_token.as_str();
    let Some(machine_id) = c
        .call(
            "register",
            "/api/v1/runner/register",
            Some(token),
            &[],
            Some(&serde_json::to_value(register).unwrap_or_default()),
        )
        .and_then(|a| serde_json::from_str::<Value>(&a.body).ok())
        .and_then(|v| v["machine_id"].as_i64())
    else {
        return c.tally;
    };
    let pause = || std::thread::sleep(o.runner_pause);
    let mut submitted = 0u32;
    while Instant::now() < deadline {
        let claim = serde_json::to_value(ClaimRequest {
            machine_id,
            wait_seconds: 0,
        })
        .unwrap_or_default();
        let Some(answer) = c.call(
            "claim",
            "/api/v1/jobs/claim",
            Some(token),
            &[],
            Some(&claim),
        ) else {
            pause();
            continue;
        };
        if answer.status == 204 {
            submitted += 1;
            let body = json!({
                "base": { "kind": "tarball", "name": "linux-source-6.1" },
                "mbox": patchperf_testkit::mbox::one_patch(
                    &format!("[PATCH] fs: load test {i}.{submitted}")),
                "workloads": ["dup1"],
                "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
                "runs": 3,
                "backend": "tcg-icount",
                "machine": name,
            });
            let id = c
                .call(
                    "submit",
                    "/api/v1/comparisons",
                    Some(&o.ci_token),
                    &[],
                    Some(&body),
                )
                .and_then(|a| serde_json::from_str::<Value>(&a.body).ok())
                .and_then(|v| v["id"].as_i64());
            if let Some(id) = id {
                ids.lock().unwrap_or_else(|p| p.into_inner()).push(id);
            }
            pause();
            continue;
        }
        let Ok(spec) = serde_json::from_str::<JobSpec>(&answer.body) else {
            continue;
        };
        run_job(&mut c, o, machine_id, &spec, i);
    }
    c.tally
}

/// Runs a claimed job as a runner would, minus the kernels.
fn run_job(c: &mut Client, o: &Options, machine_id: i64, spec: &JobSpec, i: usize) {
    let token = o.runner_token.as_str();
    let headers = [
        (MACHINE_HEADER, machine_id.to_string()),
        (ATTEMPT_HEADER, spec.attempt.to_string()),
    ];
    let path = |action: &str| format!("/api/v1/jobs/{}/{action}", spec.job_id);
    let pause = || std::thread::sleep(o.runner_pause);
    let state = serde_json::to_value(StateUpdate {
        state: JobState::Running,
        message: "running dup1".into(),
        log_tail: "booted\n".into(),
    })
    .unwrap_or_default();
    pause();
    c.call("state", &path("state"), Some(token), &headers, Some(&state));
    for boot in &spec.boots {
        pause();
        c.call(
            "heartbeat",
            &path("heartbeat"),
            Some(token),
            &headers,
            Some(&json!({})),
        );
        pause();
        let upload = serde_json::to_value(RunUpload {
            boot: *boot,
            result: run_result(*boot, i),
        })
        .unwrap_or_default();
        c.call(
            "upload",
            &path("runs"),
            Some(token),
            &headers,
            Some(&upload),
        );
    }
    pause();
    let finish = serde_json::to_value(FinishRequest::Done {
        log_tail: "guest powered off\n".into(),
    })
    .unwrap_or_default();
    c.call(
        "finish",
        &path("finish"),
        Some(token),
        &headers,
        Some(&finish),
    );
}

/// A dup1 run whose patched side is 2% faster, with a little noise.
fn run_result(boot: BootSlot, i: usize) -> patchperf_common::run::RunResult {
    let noise = 1.0 + 0.001 * f64::from((boot.seq * 7 + u32::try_from(i % 13).unwrap_or(0)) % 5);
    let ops = 100_000.0
        * noise
        * match boot.side {
            Side::Base => 1.0,
            Side::Patched => 1.02,
        };
    let per_second = (0..5)
        .map(|s| ops * (1.0 + 0.0005 * f64::from(s)))
        .collect();
    patchperf_testkit::runs::run_result("dup1", 1, per_second, ops)
}

/// A simulated person reading pages until `deadline`.
fn browser(o: &Options, i: usize, deadline: Instant, ids: &Mutex<Vec<i64>>) -> Tally {
    let mut c = Client::new(&o.url);
    let mut n = i;
    while Instant::now() < deadline {
        c.call("dashboard", "/", None, &[], None);
        std::thread::sleep(o.browser_pause);
        let id = {
            let ids = ids.lock().unwrap_or_else(|p| p.into_inner());
            n = n.wrapping_mul(31).wrapping_add(17);
            // Mostly the newest, as people follow what is running.
            let recent = ids.len().min(40);
            (recent > 0).then(|| ids[ids.len() - 1 - n % recent])
        };
        let Some(id) = id else {
            continue;
        };
        let page = c.call("page", &format!("/comparisons/{id}"), None, &[], None);
        // The runs plot the page links to, as the browser would load it
        // (none before the comparison has runs).
        let plot = page.and_then(|p| {
            p.body
                .split(['"', '\''])
                .find(|s| s.contains("/plots/runs.svg"))
                .map(|s| s.replace("&#38;", "&").replace("&amp;", "&"))
        });
        std::thread::sleep(o.browser_pause);
        for (kind, path) in [
            ("json", Some(format!("/api/v1/comparisons/{id}"))),
            ("text", Some(format!("/api/v1/comparisons/{id}/report.txt"))),
            ("plot", plot),
        ] {
            let Some(path) = path else { continue };
            if Instant::now() >= deadline {
                break;
            }
            c.call(kind, &path, None, &[], None);
            std::thread::sleep(o.browser_pause);
        }
    }
    c.tally
}

/// The `p`th percentile of sorted `micros`, in milliseconds.
fn percentile(micros: &[u64], p: f64) -> f64 {
    if micros.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * micros.len() as f64).ceil() as usize;
    micros[rank.clamp(1, micros.len()) - 1] as f64 / 1000.0
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let deadline = start + Duration::from_secs(o.seconds);
    let ids = Mutex::new(Vec::new());
    let all = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for i in 0..o.runners {
            let (o, ids, all) = (&o, &ids, &all);
            s.spawn(move || runner(o, i, deadline, ids).merge(all));
        }
        for i in 0..o.browsers {
            let (o, ids, all) = (&o, &ids, &all);
            s.spawn(move || browser(o, i, deadline, ids).merge(all));
        }
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut all = all.into_inner().unwrap_or_else(|p| p.into_inner());
    println!(
        "{} runners, {} browsers, {elapsed:.1} s (pauses: runner {} ms, browser {} ms)",
        o.runners,
        o.browsers,
        o.runner_pause.as_millis(),
        o.browser_pause.as_millis()
    );
    println!(
        "{:<10} {:>8} {:>7} {:>8} {:>9} {:>9} {:>9}",
        "kind", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms"
    );
    let (mut requests, mut errors) = (0, 0);
    let mut p99 = BTreeMap::new();
    for (name, k) in &mut all.kinds {
        k.micros.sort_unstable();
        requests += k.micros.len();
        errors += k.errors;
        p99.insert(*name, percentile(&k.micros, 99.0));
        println!(
            "{name:<10} {:>8} {:>7} {:>8.1} {:>9.1} {:>9.1} {:>9.1}",
            k.micros.len(),
            k.errors,
            k.micros.len() as f64 / elapsed,
            percentile(&k.micros, 50.0),
            percentile(&k.micros, 99.0),
            k.micros.last().copied().unwrap_or(0) as f64 / 1000.0
        );
    }
    println!(
        "total      {requests:>8} {errors:>7} {:>8.1}",
        requests as f64 / elapsed
    );
    for s in &all.samples {
        println!("error: {s}");
    }
    let heartbeat = p99.get("heartbeat").copied().unwrap_or(0.0);
    let page = ["dashboard", "page", "json", "text", "plot"]
        .iter()
        .filter_map(|k| p99.get(k).copied())
        .fold(0.0, f64::max);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "targets: 0 errors ({}: {errors}), heartbeat p99 < 100 ms ({}: {heartbeat:.1}), \
         page p99 < 200 ms ({}: worst {page:.1})",
        verdict(errors == 0),
        verdict(heartbeat < 100.0),
        verdict(page < 200.0)
    );
}
