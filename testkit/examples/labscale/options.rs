//! The command line: where the server is, which processes are its, how big
//! a lab to build and how long to measure.

use std::time::Duration;

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub url: String,
    pub ci_token: String,
    pub runner_token: String,
    pub server_pid: u32,
    pub postgres_pid: u32,
    pub clk_tck: u64,
    /// Every comparison: A/A, small, typical, large and the A/A probe.
    pub comparisons: usize,
    pub typical: usize,
    pub large: usize,
    pub machines: usize,
    /// Typical comparisons per ingest phase.
    pub ingest: usize,
    /// Measured seconds of each run (points of each series).
    pub seconds: u32,
    pub requests: usize,
    pub sequential: Duration,
    pub clients: usize,
    pub window: Duration,
    pub idle: Duration,
    pub settle: Duration,
    pub timeout: Duration,
    /// Fill the lab, wait for the builder, measure nothing
    /// (`bench/retention.sh` measures the database instead).
    pub fill_only: bool,
}

impl Options {
    /// Small comparisons: whatever the other kinds leave of `comparisons`.
    pub fn small(&self) -> usize {
        self.comparisons - self.machines - 1 - self.typical - self.large
    }
}

/// The default lab (10⁴ comparisons, ~10⁶ values) or, with `--small`,
/// one a tenth of its size, to show what grows with the database.
fn preset(small: bool) -> Options {
    let (comparisons, typical, large, ingest) = if small {
        (1_000, 40, 1, 16)
    } else {
        (10_000, 150, 14, 32)
    };
    Options {
        url: String::new(),
        ci_token: String::new(),
        runner_token: String::new(),
        server_pid: 0,
        postgres_pid: 0,
        clk_tck: 100,
        comparisons,
        typical,
        large,
        machines: 16,
        ingest,
        seconds: 30,
        requests: 20,
        sequential: Duration::from_secs(10),
        clients: 16,
        window: Duration::from_secs(3),
        idle: Duration::from_secs(10),
        settle: Duration::from_secs(10),
        timeout: Duration::from_secs(60),
        fill_only: false,
    }
}

pub fn parse() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = preset(args.iter().any(|a| a == "--small"));
    let mut positional = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--small" {
            continue;
        }
        if a == "--fill-only" {
            o.fill_only = true;
            continue;
        }
        if !a.starts_with("--") {
            positional.push(a);
            continue;
        }
        let v: u64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{a} needs a number"))?;
        let n = usize::try_from(v).map_err(|e| e.to_string())?;
        let secs = Duration::from_secs(v);
        match a.as_str() {
            "--server-pid" => o.server_pid = u32::try_from(v).map_err(|e| e.to_string())?,
            "--postgres-pid" => o.postgres_pid = u32::try_from(v).map_err(|e| e.to_string())?,
            "--clk-tck" => o.clk_tck = v,
            "--comparisons" => o.comparisons = n,
            "--typical" => o.typical = n,
            "--large" => o.large = n,
            "--machines" => o.machines = n,
            "--ingest" => o.ingest = n,
            "--seconds" => o.seconds = u32::try_from(v).map_err(|e| e.to_string())?,
            "--requests" => o.requests = n,
            "--sequential-seconds" => o.sequential = secs,
            "--clients" => o.clients = n,
            "--window-seconds" => o.window = secs,
            "--idle-seconds" => o.idle = secs,
            "--settle-seconds" => o.settle = secs,
            "--timeout-seconds" => o.timeout = secs,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    let [url, ci, runner] = <[String; 3]>::try_from(positional).map_err(|_| {
        "usage: labscale URL CI_TOKEN RUNNER_TOKEN --server-pid PID --postgres-pid PID [options]"
            .to_string()
    })?;
    o.url = url.trim_end_matches('/').to_string();
    o.ci_token = ci;
    o.runner_token = runner;
    if o.server_pid == 0 || o.postgres_pid == 0 {
        return Err("--server-pid and --postgres-pid name the processes whose CPU counts".into());
    }
    if o.machines < 8 {
        return Err("--machines must be at least 8 (the ingest phase runs 8 uploaders)".into());
    }
    if o.typical < 2 * o.ingest + 1 || o.large < 1 || o.ingest < 1 {
        return Err(format!(
            "--typical must exceed twice --ingest ({}) and --large be at least 1: the ingest \
             phases and the readers need them",
            o.ingest
        ));
    }
    if o.comparisons < o.machines + 1 + o.typical + o.large {
        return Err(format!(
            "--comparisons must be at least {} (one A/A per machine, the probe, the typical \
             and large ones)",
            o.machines + 1 + o.typical + o.large
        ));
    }
    if !(1..=600).contains(&o.seconds) || o.requests == 0 || o.clients == 0 {
        return Err("--seconds must be 1 to 600, --requests and --clients at least 1".into());
    }
    Ok(o)
}
