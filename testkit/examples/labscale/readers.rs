//! People reading the lab's results: every page and API endpoint a reader
//! uses, each measured on its own, first one client after another, then 16
//! at once, with the CPU the server and Postgres spent per request.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::client::{Client, Cpu, Errors, ms, percentile};

/// An endpoint to measure and the p99 the issue sets for it, if any.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub label: String,
    pub path: String,
    pub p99_target_ms: Option<f64>,
}

impl Endpoint {
    pub fn new(label: impl Into<String>, path: impl Into<String>, target: Option<f64>) -> Self {
        Endpoint {
            label: label.into(),
            path: path.into(),
            p99_target_ms: target,
        }
    }
}

/// How one endpoint did in one mode.
#[derive(Debug, Clone)]
pub struct Measured {
    pub label: String,
    pub clients: usize,
    pub requests: usize,
    pub errors: u64,
    /// The first request of the sequential pass (its report may not be
    /// built yet), in ms.
    pub first_ms: Option<f64>,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Server + Postgres CPU over the pass ÷ requests, in ms.
    pub cpu_ms: f64,
    pub p99_target_ms: Option<f64>,
}

/// How long to measure each endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Sequential requests per endpoint (at most).
    pub requests: usize,
    /// Sequential time per endpoint (at most; at least one request).
    pub sequential: Duration,
    /// Concurrent clients.
    pub clients: usize,
    /// Window in which concurrent clients start requests.
    pub window: Duration,
}

/// Measures endpoints against one server.
pub struct Readers<'a> {
    pub url: &'a str,
    pub errors: &'a Errors,
    pub cpu: &'a Cpu,
    pub timeout: Duration,
    pub budget: Budget,
}

impl Readers<'_> {
    /// One client after another; returns the measurement and the body of
    /// the first answer (plot links are found in it).
    pub fn sequential(&self, e: &Endpoint) -> (Measured, Option<String>) {
        let c = Client::new(self.url, self.errors, self.timeout);
        let errors = self.errors.count();
        let cpu = self.cpu.sample();
        let start = Instant::now();
        let mut times = Vec::new();
        let mut body = None;
        while times.is_empty()
            || (times.len() < self.budget.requests && start.elapsed() < self.budget.sequential)
        {
            let (answer, took) = c.get(&e.path);
            if times.is_empty() {
                body = answer.map(|a| a.body);
            }
            times.push(took);
        }
        let first = times.first().copied().map(ms);
        let m = self.summarize(e, 1, times, errors, &cpu, first);
        (m, body)
    }

    /// `budget.clients` clients at once, each requesting until the window
    /// closes; requests still running then are waited for and counted.
    pub fn concurrent(&self, e: &Endpoint) -> Measured {
        let errors = self.errors.count();
        let cpu = self.cpu.sample();
        let start = Instant::now();
        let all = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..self.budget.clients {
                s.spawn(|| {
                    let c = Client::new(self.url, self.errors, self.timeout);
                    let mut times = Vec::new();
                    while start.elapsed() < self.budget.window {
                        times.push(c.get(&e.path).1);
                    }
                    all.lock().unwrap_or_else(|p| p.into_inner()).extend(times);
                });
            }
        });
        let times = all.into_inner().unwrap_or_else(|p| p.into_inner());
        self.summarize(e, self.budget.clients, times, errors, &cpu, None)
    }

    fn summarize(
        &self,
        e: &Endpoint,
        clients: usize,
        mut times: Vec<Duration>,
        errors_before: u64,
        cpu_before: &crate::client::CpuSample,
        first_ms: Option<f64>,
    ) -> Measured {
        let cpu = self.cpu.sample();
        times.sort_unstable();
        let requests = times.len();
        Measured {
            label: e.label.clone(),
            clients,
            requests,
            errors: self.errors.count() - errors_before,
            first_ms,
            p50_ms: percentile(&times, 50.0),
            p99_ms: percentile(&times, 99.0),
            max_ms: times.last().copied().map_or(f64::NAN, ms),
            cpu_ms: ms(cpu.since(cpu_before)) / requests.max(1) as f64,
            p99_target_ms: e.p99_target_ms,
        }
    }
}

/// The plot links of a report page, one of each kind (`runs.svg`,
/// `series.svg`), as a browser would request them.
pub fn plot_links(page: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for kind in ["runs", "series"] {
        let needle = format!("/plots/{kind}.svg");
        if let Some(link) = page.split(['"', '\'']).find(|s| s.contains(&needle)) {
            out.push((kind, link.replace("&#38;", "&").replace("&amp;", "&")));
        }
    }
    out
}
