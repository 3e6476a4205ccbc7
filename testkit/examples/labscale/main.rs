//! The lab-scale benchmark's client (run by `bench/server.sh`, which starts
//! the server): fills a real server through its API as a lab's runners and
//! CI would, then measures what issue 13 sets targets for and prints them
//! as tables beside those targets.
//!
//! 1. Registers machines and runs one A/A comparison on each (noise
//!    floors), then the comparisons: mostly small (3 boots a side, one
//!    workload, will-it-scale only), some typical (5 a side, perf: ~2k
//!    values), a few large (10 a side × 2 workloads × 3 nr_task, perf:
//!    ~29k values), each machine's runner submitting its next one when the
//!    previous is done.
//! 2. Ingest: typical comparisons submitted first, then run by 1 and by 8
//!    runners at once; values/s and server + Postgres CPU per value.
//! 3. Idle: server and Postgres CPU over a quiet spell.
//! 4. Readers: every page and API endpoint of a typical and a large
//!    comparison and every listing, one client after another and 16 at
//!    once: p50/p99/max and CPU-ms per request.
//! 5. One more A/A on a busy machine: how long the first verdict listing
//!    takes after it, and when the listings show the verdicts its new
//!    noise floor gives.
//!
//! Exits 1 when any request failed or a comparison did not finish.
//!
//! usage: labscale URL CI_TOKEN RUNNER_TOKEN --server-pid PID --postgres-pid PID
//!        [--clk-tck HZ] [--small] [--comparisons N] [--typical N] [--large N]
//!        [--machines N] [--ingest N] [--seconds S] [--requests N]
//!        [--sequential-seconds S] [--clients N] [--window-seconds S]
//!        [--idle-seconds S] [--settle-seconds S] [--timeout-seconds S]
//!        [--fill-only]   (steps 1 and 2, then waits for the builder; exits)

mod aa_probe;
mod client;
mod lab;
mod options;
mod readers;
mod runs;
mod tables;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use client::{Client, Cpu, Errors, load_average};
use lab::{Finished, Item, Kind, Lab, Machine, Planned};
use options::Options;
use readers::{Budget, Endpoint, Readers};
use tables::{Idle, Ingest};

/// Noise of the initial A/A comparisons, ‰: the lab's machines.
const AA_NOISE_PERMILLE: u32 = 5;
/// Noise of the probing A/A, ‰: a machine measured as noisier than before,
/// so that its new floor changes verdicts the listings must follow.
const PROBE_NOISE_PERMILLE: u32 = 30;

/// The targets.
const REPORT_P99_MS: f64 = 20.0;
const LARGE_REPORT_P99_MS: f64 = 100.0;
const LISTING_P99_MS: f64 = 20.0;
const INGEST_VALUES_PER_SECOND: f64 = 10_000.0;

fn main() {
    let o = match options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("labscale: {e}");
            std::process::exit(2);
        }
    };
    let errors = Errors::default();
    let cpu = Cpu::new(o.server_pid, o.postgres_pid, o.clk_tck);
    let lab = Lab {
        url: &o.url,
        ci_token: &o.ci_token,
        runner_token: &o.runner_token,
        errors: &errors,
        seconds: o.seconds,
        timeout: o.timeout,
        counts: Default::default(),
    };
    let load_before = load_average();
    let started = Instant::now();

    let machines = lab.register(o.machines);
    if machines.len() != o.machines {
        fail(&errors, "could not register the machines");
    }
    let plan = plan(&o);
    println!(
        "labscale: {} machines; {} comparisons: {} A/A, {} small, {} typical ({} of them in the \
         ingest phases), {} large, 1 A/A probe; {} s runs",
        machines.len(),
        o.comparisons,
        machines.len(),
        plan.iter().filter(|p| p.kind == Kind::Small).count(),
        o.typical,
        2 * o.ingest,
        o.large,
        o.seconds
    );
    let mut finished = populate(&lab, &machines, &plan);
    let mut n = plan.len() as u64;
    let ingest = [1, 8].map(|uploaders| {
        let (done, measured) = ingest(&lab, &cpu, &machines, uploaders, o.ingest, n);
        n += o.ingest as u64;
        finished.extend(done);
        measured
    });
    let expected = o.comparisons - 1;
    if finished.len() != expected {
        fail_soft(
            &errors,
            format!("{} of {expected} comparisons finished", finished.len()),
        );
    }

    drain_builder(&o, &errors);
    if o.fill_only {
        println!(
            "labscale: filled: {} comparisons, {} metric values, {} series points in {:.0} s",
            finished.len(),
            lab.counts.values.load(Ordering::Relaxed),
            lab.counts.points.load(Ordering::Relaxed),
            started.elapsed().as_secs_f64()
        );
        let failed = errors.count();
        if failed > 0 {
            fail(&errors, &format!("{failed} failed requests"));
        }
        return;
    }
    println!("idle: {} s with nothing to do", o.idle.as_secs());
    let idle_before = cpu.sample();
    std::thread::sleep(o.idle);
    let idle_after = cpu.sample();
    let idle = Idle::new(&idle_before, &idle_after);

    let readers = Readers {
        url: &o.url,
        errors: &errors,
        cpu: &cpu,
        timeout: o.timeout,
        budget: Budget {
            requests: o.requests,
            sequential: o.sequential,
            clients: o.clients,
            window: o.window,
        },
    };
    let measured = read(&readers, &machines, &finished);

    let busiest = busiest_machine(&machines, &finished);
    let probe = aa_probe::run(
        &lab,
        &machines,
        busiest,
        &finished,
        n,
        PROBE_NOISE_PERMILLE,
        o.settle,
    );
    let load_after = load_average();

    tables::print(&tables::Summary {
        ingest: &ingest,
        ingest_target: INGEST_VALUES_PER_SECOND,
        idle: &idle,
        readers: &measured,
        probe: &probe,
        listing_target_ms: LISTING_P99_MS,
        values: lab.counts.values.load(Ordering::Relaxed),
        points: lab.counts.points.load(Ordering::Relaxed),
        comparisons: finished.len() + 1,
        elapsed: started.elapsed(),
        load_before: &load_before,
        load_after: &load_after,
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
    });
    let failed = errors.count();
    for s in errors.samples() {
        println!("error: {s}");
    }
    if failed > 0 {
        println!("labscale: {failed} failed requests");
        std::process::exit(1);
    }
}

/// Waits until the server's report builder has built every report the
/// lab made stale (`reports_to_build` of `/healthz` is 0), and says how
/// many there were and how long that took: the idle measurement that
/// follows should find nothing left to do.
fn drain_builder(o: &Options, errors: &Errors) {
    let c = Client::new(&o.url, errors, o.timeout);
    let waiting = || {
        c.get("/healthz")
            .0
            .and_then(|a| serde_json::from_str::<serde_json::Value>(&a.body).ok())
            .and_then(|v| v["reports_to_build"].as_u64())
    };
    let started = Instant::now();
    let first = waiting();
    let mut left = first;
    while left.is_some_and(|n| n > 0) && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(500));
        left = waiting();
    }
    println!(
        "builder: {} reports to build when the lab was filled, {} left after {:.1} s",
        first.map_or("?".into(), |n| n.to_string()),
        left.map_or("?".into(), |n| n.to_string()),
        started.elapsed().as_secs_f64()
    );
}

fn fail(errors: &Errors, why: &str) -> ! {
    for s in errors.samples() {
        eprintln!("error: {s}");
    }
    eprintln!("labscale: {why}");
    std::process::exit(1);
}

/// Counted as an error, so the benchmark exits non-zero at the end.
fn fail_soft(errors: &Errors, why: String) {
    println!("labscale: {why}");
    errors.note(why);
}

/// The A/A comparison of each machine, then the lab's comparisons in a
/// shuffled order, round-robin over the machines.
fn plan(o: &Options) -> Vec<Planned> {
    let m = o.machines;
    let mut out: Vec<Planned> = (0..m)
        .map(|i| Planned {
            n: i as u64,
            kind: Kind::Aa {
                noise_permille: AA_NOISE_PERMILLE,
            },
            machine: i,
        })
        .collect();
    let mut kinds: Vec<Kind> = std::iter::repeat_n(Kind::Small, o.small())
        .chain(std::iter::repeat_n(Kind::Typical, o.typical - 2 * o.ingest))
        .chain(std::iter::repeat_n(Kind::Large, o.large))
        .collect();
    kinds.shuffle(&mut StdRng::seed_from_u64(13));
    out.extend(kinds.into_iter().enumerate().map(|(k, kind)| Planned {
        n: (m + k) as u64,
        kind,
        machine: k % m,
    }));
    out
}

/// Runs the A/A comparisons, then the rest, printing progress.
fn populate(lab: &Lab<'_>, machines: &[Machine], plan: &[Planned]) -> Vec<Finished> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (aa, ab): (Vec<Item>, Vec<Item>) = plan
        .iter()
        .map(|p| Item::Planned(*p))
        .partition(|i| matches!(i, Item::Planned(p) if matches!(p.kind, Kind::Aa { .. })));
    let done = std::thread::scope(|s| {
        s.spawn(|| {
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed() >= Duration::from_secs(15) {
                    last = Instant::now();
                    progress(lab, plan.len(), start);
                }
            }
        });
        let mut done = lab.run(machines, &aa);
        done.extend(lab.run(machines, &ab));
        stop.store(true, Ordering::Relaxed);
        done
    });
    progress(lab, plan.len(), start);
    done
}

fn progress(lab: &Lab<'_>, total: usize, start: Instant) {
    let values = lab.counts.values.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "populate: {:>6}/{total} comparisons, {values:>9} values ({:.0} values/s), {} errors, {secs:.0} s",
        lab.counts.comparisons.load(Ordering::Relaxed),
        values as f64 / secs.max(0.001),
        lab.errors.count(),
    );
}

/// `count` typical comparisons submitted first, then run by `uploaders`
/// runners at once: what was uploaded, how fast, at what CPU.
fn ingest(
    lab: &Lab<'_>,
    cpu: &Cpu,
    machines: &[Machine],
    uploaders: usize,
    count: usize,
    first_n: u64,
) -> (Vec<Finished>, Ingest) {
    let plan: Vec<Planned> = (0..count)
        .map(|k| Planned {
            n: first_n + k as u64,
            kind: Kind::Typical,
            machine: k % uploaders,
        })
        .collect();
    let items = lab.submit_all(machines, &plan);
    let n = &lab.counts;
    let (runs, values, points) = (
        n.runs.load(Ordering::Relaxed),
        n.values.load(Ordering::Relaxed),
        n.points.load(Ordering::Relaxed),
    );
    let uploads = n.upload_times.lock().map_or(0, |u| u.len());
    let before = cpu.sample();
    let done = lab.run(machines, &items);
    let after = cpu.sample();
    let mut times = n
        .upload_times
        .lock()
        .map(|u| u[uploads..].to_vec())
        .unwrap_or_default();
    times.sort_unstable();
    let measured = Ingest {
        uploaders,
        comparisons: done.len(),
        runs: n.runs.load(Ordering::Relaxed) - runs,
        values: n.values.load(Ordering::Relaxed) - values,
        points: n.points.load(Ordering::Relaxed) - points,
        seconds: (after.at - before.at).as_secs_f64(),
        server_cpu: after.server.saturating_sub(before.server),
        postgres_cpu: after.postgres.saturating_sub(before.postgres),
        upload_times: times,
    };
    println!(
        "ingest: {uploaders} uploader(s): {} values in {:.1} s",
        measured.values, measured.seconds
    );
    (done, measured)
}

/// The machine with the most comparisons.
fn busiest_machine(machines: &[Machine], finished: &[Finished]) -> usize {
    (0..machines.len())
        .max_by_key(|&i| finished.iter().filter(|f| f.machine == i).count())
        .unwrap_or(0)
}

/// Every listing and every page and endpoint of the newest typical and
/// large comparison, one client after another, then many at once.
fn read(r: &Readers<'_>, machines: &[Machine], finished: &[Finished]) -> Vec<readers::Measured> {
    let m = &machines[0];
    let workload = m.shape(Kind::Small, 1).workloads[0];
    let mut ids: Vec<i64> = finished.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    let middle = ids.get(ids.len() / 2).copied().unwrap_or(0);
    let list = Some(LISTING_P99_MS);
    let endpoints = vec![
        Endpoint::new("dashboard /", "/", None),
        Endpoint::new("/?verdict=regression", "/?verdict=regression", list),
        Endpoint::new("/?verdict=improvement", "/?verdict=improvement", list),
        Endpoint::new("/?verdict=no change", "/?verdict=no+change", list),
        Endpoint::new("/?status=done", "/?status=done", None),
        Endpoint::new("/?sort=oldest", "/?sort=oldest", list),
        Endpoint::new("/?sort=verdict", "/?sort=verdict", list),
        Endpoint::new("/?sort=verdict&page=50", "/?sort=verdict&page=50", list),
        Endpoint::new("/?machine=M", format!("/?machine={}", m.name), None),
        Endpoint::new("/?workload=W", format!("/?workload={workload}"), None),
        Endpoint::new(
            "/?machine=M&verdict=regression",
            format!("/?machine={}&verdict=regression", m.name),
            list,
        ),
        Endpoint::new("/machines", "/machines", None),
        Endpoint::new("/machines/M", format!("/machines/{}", m.name), None),
        Endpoint::new("api machines", "/api/v1/machines", None),
        Endpoint::new("api comparisons", "/api/v1/comparisons", None),
        Endpoint::new(
            "api ?verdict=regression",
            "/api/v1/comparisons?verdict=regression",
            list,
        ),
        Endpoint::new("api ?status=done", "/api/v1/comparisons?status=done", None),
        Endpoint::new(
            "api ?sort=oldest&after=mid",
            format!("/api/v1/comparisons?sort=oldest&after={middle}"),
            list,
        ),
        Endpoint::new(
            "api ?machine=M",
            format!("/api/v1/comparisons?machine={}", m.name),
            None,
        ),
        Endpoint::new(
            "api ?workload=W",
            format!("/api/v1/comparisons?workload={workload}"),
            None,
        ),
        Endpoint::new(
            "api ?limit=500&before=mid",
            format!("/api/v1/comparisons?limit=500&before={middle}"),
            None,
        ),
    ];
    let mut out = Vec::new();
    let measure = |e: &Endpoint, out: &mut Vec<readers::Measured>| {
        let (seq, body) = r.sequential(e);
        let conc = r.concurrent(e);
        println!(
            "read: {:<34} p50/p99 {:>8.1}/{:>8.1} ms, {} clients {:>8.1}/{:>8.1} ms",
            e.label, seq.p50_ms, seq.p99_ms, conc.clients, conc.p50_ms, conc.p99_ms
        );
        out.extend([seq, conc]);
        body
    };
    for e in &endpoints {
        measure(e, &mut out);
    }
    for (name, kind, target) in [
        ("typical", Kind::Typical, REPORT_P99_MS),
        ("large", Kind::Large, LARGE_REPORT_P99_MS),
    ] {
        let Some(f) = finished.iter().rev().find(|f| f.kind == kind) else {
            r.errors
                .note(format!("no {name} comparison finished to read"));
            continue;
        };
        let id = f.id;
        let page = Endpoint::new(
            format!("{name} page"),
            format!("/comparisons/{id}"),
            Some(target),
        );
        let body = measure(&page, &mut out).unwrap_or_default();
        let mut rest: Vec<Endpoint> = readers::plot_links(&body)
            .into_iter()
            .map(|(kind, link)| Endpoint::new(format!("{name} {kind}.svg"), link, Some(target)))
            .collect();
        if rest.len() != 2 {
            r.errors.note(format!(
                "the {name} report page links {} plot kinds, not 2",
                rest.len()
            ));
        }
        rest.extend([
            Endpoint::new(
                format!("{name} JSON"),
                format!("/api/v1/comparisons/{id}"),
                Some(target),
            ),
            Endpoint::new(
                format!("{name} report.txt"),
                format!("/api/v1/comparisons/{id}/report.txt"),
                Some(target),
            ),
            Endpoint::new(
                format!("{name} job log"),
                format!("/jobs/{}/log", f.first_job),
                None,
            ),
        ]);
        for e in &rest {
            measure(e, &mut out);
        }
    }
    out
}
