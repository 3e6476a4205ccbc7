//! One scrape of `/metrics`: what the database says now (jobs by state,
//! the queue per machine, comparisons by status, each machine's state,
//! last heartbeat and job, the outbox, reports waiting to be built), how each
//! background worker is doing, the Postgres pool and the git mirrors,
//! with this server's own counters ([`super::Telemetry`]), written in the
//! OpenMetrics text format.
//!
//! The gauges are read fresh from the database each time, so every server
//! on one database tells the same numbers; the counters (requests, report
//! builds, worker rounds) are this server's since it started, as
//! Prometheus expects of counters, and a fleet's are summed by `sum()`.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use chrono::{DateTime, Utc};
use patchperf_common::comparison::ComparisonStatus;
use patchperf_common::machine_state::MachineState;
use patchperf_common::protocol::{FailureReason, JobState};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use super::Telemetry;
use crate::db;
use crate::domain::Context;
use crate::error::Error;

type Labels = Vec<(&'static str, String)>;
type Gauges = Family<Labels, Gauge>;
type Seconds = Family<Labels, Gauge<f64, AtomicU64>>;

/// Seconds since the epoch with their fraction, as Prometheus' `time()`.
fn epoch_seconds(at: DateTime<Utc>) -> f64 {
    at.timestamp_micros() as f64 / 1e6
}

fn label(key: &'static str, value: impl Into<String>) -> Labels {
    vec![(key, value.into())]
}

/// The exposition of this moment, ready to serve with
/// [`super::CONTENT_TYPE`].
pub async fn exposition(ctx: &Context) -> Result<String, Error> {
    // What the database says goes in a registry of its own: when the
    // database does not answer (within DATABASE_LIMIT) the scrape still
    // carries this process's own series, with `database_up` 0, instead of
    // failing and blinding the monitoring just when it matters.
    let mut from_database = Registry::with_prefix("patchperf");
    let up = match tokio::time::timeout(DATABASE_LIMIT, database(ctx, &mut from_database)).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "/metrics: the database did not answer");
            false
        }
        Err(_) => {
            tracing::warn!("/metrics: the database did not answer in time");
            false
        }
    };
    let mut registry = Registry::with_prefix("patchperf");
    let database_up: Gauge = Gauge::default();
    database_up.set(i64::from(up));
    registry.register(
        "database_up",
        "Whether this scrape read the database (1) or it did not answer (0)",
        database_up,
    );
    workers(ctx, &mut registry);
    pool_and_mirrors(ctx, &mut registry).await;
    own(&ctx.telemetry, &mut registry);
    let mut plain = Registry::default();
    super::process::register(&mut registry, &mut plain);
    let mut text = String::new();
    let write = |e: std::fmt::Error| Error::Internal(format!("writing the metrics: {e}"));
    if up {
        encode(&mut text, &from_database).map_err(write)?;
        // One exposition: the second registry's text ends it.
        if let Some(body) = text.strip_suffix("# EOF\n") {
            text.truncate(body.len());
        }
    }
    encode(&mut text, &registry).map_err(write)?;
    if let Some(body) = text.strip_suffix("# EOF\n") {
        text.truncate(body.len());
    }
    encode(&mut text, &plain).map_err(write)?;
    Ok(text)
}

/// How long a scrape waits for the database's answers.
const DATABASE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

async fn database(ctx: &Context, registry: &mut Registry) -> Result<(), Error> {
    // Every state is shown, 0 when none is in it: a job that leaves
    // `queued` must show as queued 0, not as a series that stopped.
    let jobs = Gauges::default();
    for state in JobState::ALL {
        jobs.get_or_create(&label("state", state.as_str())).set(0);
    }
    for (state, n) in db::jobs::count_by_state(&ctx.db).await? {
        jobs.get_or_create(&label("state", state)).set(n);
    }
    registry.register("jobs", "Jobs in each state", jobs);

    // Every reason at 0 until a job fails for it, so a rate over it has no
    // gap; the oldest queued job's age tells a queue that does not move.
    let (failures, oldest) = db::jobs::failures_and_oldest_queued(&ctx.db).await?;
    let failed = Gauges::default();
    for reason in FailureReason::ALL {
        failed
            .get_or_create(&label("reason", reason.as_str()))
            .set(0);
    }
    for (reason, n) in failures {
        failed.get_or_create(&label("reason", reason)).set(n);
    }
    registry.register(
        "job_failures",
        "Failed jobs by why they failed (patch does not apply, build failed, …)",
        failed,
    );
    let age: Gauge<f64, AtomicU64> = Gauge::default();
    age.set(oldest);
    registry.register_with_unit(
        "oldest_queued_job_age",
        "How long the oldest queued job has waited (0: none waits)",
        Unit::Seconds,
        age,
    );

    let comparisons = Gauges::default();
    for status in ComparisonStatus::ALL {
        comparisons
            .get_or_create(&label("status", status.as_str()))
            .set(0);
    }
    for (status, n) in db::comparisons::count_by_status(&ctx.db).await? {
        comparisons.get_or_create(&label("status", status)).set(n);
    }
    registry.register("comparisons", "Comparisons in each status", comparisons);

    // The fleet's own reads (`domain::machines::fleet` gathers the same
    // for the machines pages): every machine, retired ones included, the
    // jobs they hold and the queue pinned to each (id 0: any machine's).
    let machines = db::machines::list(&ctx.db, true).await?;
    // Per machine: the job of highest id it holds and how many.
    let mut held: HashMap<i64, (i64, i64)> = HashMap::new();
    for job in db::machines::held_jobs(&ctx.db, None).await? {
        let entry = held.entry(job.machine_id).or_default();
        *entry = (job.id, entry.1 + 1);
    }
    let names: HashMap<i64, &str> = machines.iter().map(|m| (m.id, m.name.as_str())).collect();
    let queued = Gauges::default();
    // Always one series, so an empty queue reads 0 rather than nothing (an
    // alert on it sees no gap).
    queued.get_or_create(&label("machine", "(any)")).set(0);
    for (id, n) in db::machines::queue_depths(&ctx.db).await? {
        // A comparison that names no machine waits for any of them.
        let name = names.get(&id).copied().unwrap_or("(any)");
        queued.get_or_create(&label("machine", name)).set(n);
    }
    registry.register(
        "jobs_queued",
        "Queued jobs by the machine they wait for ((any): no machine named)",
        queued,
    );

    let seen = Seconds::default();
    let holding = Gauges::default();
    let holding_count = Gauges::default();
    let states = Gauges::default();
    for m in &machines {
        // One series a state, 1 for the machine's: Prometheus' state set.
        for &state in MachineState::ALL {
            states
                .get_or_create(&vec![
                    ("machine", m.name.clone()),
                    ("state", state.as_str().to_string()),
                ])
                .set(i64::from(state == m.state));
        }
        let machine = label("machine", m.name.clone());
        seen.get_or_create(&machine).set(epoch_seconds(m.last_seen));
        let (last, count) = held.get(&m.id).copied().unwrap_or_default();
        holding.get_or_create(&machine).set(last);
        holding_count.get_or_create(&machine).set(count);
    }
    registry.register_with_unit(
        "machine_last_seen_timestamp",
        "When each machine last registered, claimed, sent a heartbeat or uploaded",
        Unit::Seconds,
        seen,
    );
    registry.register(
        "machine_state",
        "Each machine's state as an admin set it: 1 for the one it is in",
        states,
    );
    registry.register(
        "machine_job",
        "The highest id of the jobs each machine holds the lease of (0: none)",
        holding,
    );
    registry.register(
        "machine_jobs_held",
        "How many jobs each machine holds the lease of",
        holding_count,
    );

    let outbox = Gauges::default();
    // Every channel and state a message can be in, 0 until one is.
    for channel in ["mail", "webhook"] {
        for state in ["queued", "sent", "failed"] {
            outbox
                .get_or_create(&vec![("channel", channel.into()), ("state", state.into())])
                .set(0);
        }
    }
    for (channel, state, n) in db::outbox::count_by_state(&ctx.db).await? {
        outbox
            .get_or_create(&vec![("channel", channel), ("state", state)])
            .set(n);
    }
    registry.register(
        "outbox_messages",
        "Mails and webhook calls by state (queued: waiting for a relay or a retry)",
        outbox,
    );

    let stale: Gauge = Gauge::default();
    stale.set(db::reports::stale_count(&ctx.db).await?);
    registry.register(
        "reports_to_build",
        "Comparisons whose report waits for the report-builder",
        stale,
    );
    Ok(())
}

fn workers(ctx: &Context, registry: &mut Registry) {
    let rounds = Family::<Labels, Counter>::default();
    let errors = Family::<Labels, Counter>::default();
    let panics = Family::<Labels, Counter>::default();
    let running = Gauges::default();
    let last_run = Seconds::default();
    let last_ok = Seconds::default();
    for (name, health) in ctx.workers.snapshot() {
        let worker = label("worker", name);
        rounds.get_or_create(&worker).inc_by(health.rounds);
        errors.get_or_create(&worker).inc_by(health.errors);
        panics.get_or_create(&worker).inc_by(health.panics);
        running
            .get_or_create(&worker)
            .set(i64::from(health.running));
        for (family, at) in [
            (&last_run, health.last_run_at),
            (&last_ok, health.last_ok_at),
        ] {
            if let Some(at) = at {
                family.get_or_create(&worker).set(epoch_seconds(at));
            }
        }
    }
    registry.register(
        "worker_rounds",
        "Rounds each background worker finished, well or not",
        rounds,
    );
    registry.register(
        "worker_errors",
        "Rounds of each background worker that failed, panics included",
        errors,
    );
    registry.register(
        "worker_panics",
        "Rounds of each background worker that panicked",
        panics,
    );
    registry.register(
        "worker_running",
        "Whether each background worker is in a round now",
        running,
    );
    registry.register_with_unit(
        "worker_last_run_timestamp",
        "When each background worker last started a round",
        Unit::Seconds,
        last_run,
    );
    registry.register_with_unit(
        "worker_last_ok_timestamp",
        "When each background worker last finished a round well",
        Unit::Seconds,
        last_ok,
    );
}

async fn pool_and_mirrors(ctx: &Context, registry: &mut Registry) {
    let connections = Gauges::default();
    let open = i64::from(ctx.db.size());
    let idle = i64::try_from(ctx.db.num_idle()).unwrap_or(i64::MAX);
    connections.get_or_create(&label("state", "idle")).set(idle);
    connections
        .get_or_create(&label("state", "in_use"))
        .set((open - idle).max(0));
    registry.register(
        "db_pool_connections",
        "This server's Postgres connections, idle or in use",
        connections,
    );
    let max: Gauge = Gauge::default();
    max.set(i64::from(ctx.db.options().get_max_connections()));
    registry.register(
        "db_pool_max_connections",
        "Most Postgres connections this server opens",
        max,
    );

    let usage = ctx.git.usage().await;
    let bytes: Gauge = Gauge::default();
    bytes.set(i64::try_from(usage.bytes).unwrap_or(i64::MAX));
    registry.register_with_unit(
        "git_mirrors",
        "What the git mirrors take on disk",
        Unit::Bytes,
        bytes,
    );
    let commands: Gauge = Gauge::default();
    commands.set(i64::try_from(usage.running).unwrap_or(i64::MAX));
    registry.register("git_commands", "git commands running now", commands);
}

fn own(t: &Telemetry, registry: &mut Registry) {
    registry.register(
        "http_requests",
        "HTTP requests answered, by method, route and status",
        t.requests.clone(),
    );
    registry.register_with_unit(
        "http_request_duration",
        "How long HTTP requests took to answer, by method and route",
        Unit::Seconds,
        t.latency.clone(),
    );
    registry.register(
        "report_builds",
        "Reports built and stored by this server",
        t.report_builds.clone(),
    );
    registry.register_with_unit(
        "report_build_duration",
        "How long building one report took",
        Unit::Seconds,
        t.report_seconds.clone(),
    );
}
