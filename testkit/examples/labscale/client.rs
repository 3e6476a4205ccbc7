//! HTTP calls as the lab makes them, each timed and counted, and the CPU
//! time the server and its Postgres spent, read from `/proc`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every failed request of the whole benchmark, and the first few of them.
#[derive(Debug, Default)]
pub struct Errors {
    count: AtomicU64,
    samples: Mutex<Vec<String>>,
}

impl Errors {
    /// Counts a failure; `what` says what failed.
    pub fn note(&self, what: String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() < 10 {
            s.push(what);
        }
    }

    /// Failed requests so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The first failures, to say what went wrong.
    pub fn samples(&self) -> Vec<String> {
        self.samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// An answer: status and body.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// One simulated client: an HTTP agent with keep-alive.
pub struct Client<'a> {
    http: ureq::Agent,
    base: &'a str,
    errors: &'a Errors,
}

impl<'a> Client<'a> {
    pub fn new(base: &'a str, errors: &'a Errors, timeout: Duration) -> Client<'a> {
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        Client { http, base, errors }
    }

    /// GETs `path`; the answer (2xx only) and how long it took.
    pub fn get(&self, path: &str) -> (Option<Answer>, Duration) {
        self.send(path, None, &[])
    }

    /// POSTs the JSON text `body` to `path` with `token` and `headers`.
    pub fn post(
        &self,
        path: &str,
        token: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (Option<Answer>, Duration) {
        self.send(path, Some((token, body)), headers)
    }

    fn send(
        &self,
        path: &str,
        post: Option<(&str, &str)>,
        headers: &[(&str, String)],
    ) -> (Option<Answer>, Duration) {
        let url = format!("{}{path}", self.base);
        let start = Instant::now();
        let sent = match post {
            Some((token, body)) => {
                let mut req = self
                    .http
                    .post(&url)
                    .header("authorization", &format!("Bearer {token}"))
                    .header("content-type", "application/json");
                for (k, v) in headers {
                    req = req.header(*k, v);
                }
                req.send(body)
            }
            None => self.http.get(&url).call(),
        };
        let answer = sent.and_then(|mut r| {
            let status = r.status().as_u16();
            r.body_mut()
                .with_config()
                .limit(256 << 20)
                .read_to_string()
                .map(|body| Answer { status, body })
        });
        let took = start.elapsed();
        match answer {
            Ok(a) if (200..300).contains(&a.status) => (Some(a), took),
            Ok(a) => {
                self.errors
                    .note(format!("{path}: {} {:.200}", a.status, a.body));
                (None, took)
            }
            Err(e) => {
                self.errors.note(format!("{path}: {e}"));
                (None, took)
            }
        }
    }
}

/// The `p`th percentile of sorted `samples`, in milliseconds.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    ms(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The processes whose CPU time counts: the server and its Postgres (the
/// postmaster and every backend and helper under it).
#[derive(Debug, Clone)]
pub struct Cpu {
    server: u32,
    postmaster: u32,
    ticks_per_second: f64,
}

/// Server and Postgres CPU time used so far.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    pub server: Duration,
    pub postgres: Duration,
    pub at: Instant,
}

impl CpuSample {
    /// Server + Postgres CPU time between `earlier` and this sample.
    pub fn since(&self, earlier: &CpuSample) -> Duration {
        (self.server + self.postgres).saturating_sub(earlier.server + earlier.postgres)
    }
}

impl Cpu {
    /// `ticks_per_second` is `getconf CLK_TCK`.
    pub fn new(server: u32, postmaster: u32, ticks_per_second: u64) -> Cpu {
        Cpu {
            server,
            postmaster,
            ticks_per_second: ticks_per_second.max(1) as f64,
        }
    }

    /// Reads both now. Fields 14–17 of `/proc/PID/stat` are utime, stime,
    /// cutime and cstime in clock ticks; backends that exited are in their
    /// postmaster's cutime and cstime.
    pub fn sample(&self) -> CpuSample {
        let mut pg = stat(self.postmaster).map_or(0, |s| s.ticks);
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) else {
                    continue;
                };
                if let Some(s) = stat(pid) {
                    if s.ppid == self.postmaster {
                        pg += s.ticks;
                    }
                }
            }
        }
        let server = stat(self.server).map_or(0, |s| s.ticks);
        let secs = |t: u64| Duration::from_secs_f64(t as f64 / self.ticks_per_second);
        CpuSample {
            server: secs(server),
            postgres: secs(pg),
            at: Instant::now(),
        }
    }
}

struct Stat {
    ppid: u32,
    ticks: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields follow the last `)`.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): ppid is field 4, utime..cstime 14..17.
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Some(Stat { ppid, ticks })
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
