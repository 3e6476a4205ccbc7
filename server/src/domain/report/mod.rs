//! The report builder: loads a comparison's stored runs (its metric values
//! with one indexed query) and builds one 0-day style
//! [`Comparison`](patchperf_common::report::Comparison) per (workload, mode,
//! nr_task) with the shared crate's statistics. The JSON API, the text
//! report and the HTML pages all render what this returns, so they show the
//! same numbers. Each server keeps what it built in
//! [`crate::domain::report::cache`] until the
//! comparison's runs or verdict inputs change.

pub mod cache;
pub mod offload;
pub mod steps;
pub mod steps_text;
pub mod stored;
pub mod verdict;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use patchperf_common::api::submission::code_layout_line;
use patchperf_common::comparison::{ComparisonKind, ComparisonStatus};
use patchperf_common::naming::{self, NameKind};
use patchperf_common::protocol::NrTask;
use patchperf_common::report::{
    KernelLabel, ReportHeader, build_comparison, group_by_report, header_from_runs,
};
use patchperf_common::run::{MeasurementMode, MetricValue, RunResult, Side, TaskMode};
use patchperf_common::stats::VerdictPolicy;
use patchperf_common::stats::calibration::{Look, judging};
use patchperf_common::stats::verdict::delta_text;
use sqlx::PgPool;

pub use patchperf_common::report::stored::{ComparisonReport, GroupReport, StoredRun};

use crate::db::comparisons::ComparisonRow;
use crate::db::runs::RunMeta;
use crate::domain::Context;
use crate::domain::calibration::{self, NoiseFloors};
use crate::domain::comparison::name::{self, Named};
use crate::domain::report::cache::Inputs;
use crate::{Error, db};

/// What the report header knows of the comparison besides its runs.
#[derive(Debug, Clone, Default)]
pub struct HeaderFacts {
    /// The patch's subject: a step's own, or the one patch compared.
    pub subject: Option<String>,
    /// What was compared and where its base came from, as kernel people
    /// name them; `None` for a step or a bisection's probe, which are
    /// named by their own patch.
    pub named: Option<Named>,
    /// sha256 of the mbox.
    pub series_sha256: String,
    /// Where the report page lives.
    pub report_url: Option<String>,
    /// A whole series taken from its steps: the step of its base runs and
    /// that of its patched runs.
    pub runs_from_steps: Option<[u32; 2]>,
}

/// The report of comparison `c`, with the header facts (patch subject,
/// series hash, report URL) read from the database, judged against its
/// machine's noise floor when an A/A comparison has measured one. Built
/// once per change of its inputs and stored: the one this server holds is
/// returned while the database says its runs, row and noise floor are
/// still those it was built from (see [`cache`]), else the stored one when
/// it is current (see [`stored`]), and only then is it built.
pub async fn load_shared(ctx: &Context, c: &ComparisonRow) -> Result<Arc<ComparisonReport>, Error> {
    // Read before building: a run stored meanwhile then only makes the
    // entry miss next time, never a report of old runs look current.
    let inputs = inputs(ctx, c).await?;
    if let Some(kept) = ctx.reports.get(c.id, &inputs) {
        return Ok(kept);
    }
    let builder = ctx.reports.builder(c.id);
    let _building = builder.lock().await;
    if let Some(kept) = ctx.reports.get(c.id, &inputs) {
        return Ok(kept);
    }
    let report = match stored::read(ctx, c.id, &inputs).await? {
        Some(report) => Arc::new(report),
        None => {
            let started = Instant::now();
            let built = Arc::new(load_uncached(ctx, c, inputs.latest_aa()).await?);
            // Counted as built (the statistics ran), as opposed to read
            // back from the database.
            ctx.telemetry.report_built(started.elapsed());
            stored::write(ctx, c.id, &inputs, &built, started.elapsed()).await?;
            built
        }
    };
    ctx.reports.put(c.id, inputs, Arc::clone(&report));
    Ok(report)
}

/// Machine `machine_id`'s noise floors as of `as_of` (as `inventory`
/// describes the machine then): read from the reports of the A/A
/// comparisons that speak for it ([`calibration::speaking_aas`]), each
/// built once like any other report.
pub async fn noise_floors(
    ctx: &Context,
    machine_id: i64,
    as_of: DateTime<Utc>,
    inventory: Option<&serde_json::Value>,
) -> Result<NoiseFloors, Error> {
    let mut floors = NoiseFloors::none(&ctx.config);
    for aa in calibration::speaking_aas(ctx, machine_id, as_of, inventory).await? {
        let report = Box::pin(load_shared(ctx, &aa.row)).await?;
        floors.add(&aa, &report);
    }
    Ok(floors)
}

/// What comparison `c`'s report would be built from now.
async fn inputs(ctx: &Context, c: &ComparisonRow) -> Result<Inputs, Error> {
    let runs = db::progress::runs_so_far(&ctx.db, c.id).await?;
    let latest_aa = match (c.kind, c.machine_id) {
        (ComparisonKind::Ab, Some(machine_id)) => {
            db::comparisons::latest_aa(&ctx.db, machine_id).await?
        }
        _ => None,
    };
    Ok(Inputs::new(c, runs, latest_aa))
}

/// Builds comparison `c`'s report, judged against the floor of A/A
/// comparison `latest_aa`: the one its inputs were read with, so that what
/// is stored was built from exactly those inputs.
async fn load_uncached(
    ctx: &Context,
    c: &ComparisonRow,
    latest_aa: Option<i64>,
) -> Result<ComparisonReport, Error> {
    let messages = db::patches::messages(&ctx.db, c.series_id).await?;
    let patches: Vec<_> = messages.iter().filter(|m| m.has_diff).collect();
    let probe = db::comparisons::probe_of(&ctx.db, c.id).await?.is_some();
    let named = if c.step.is_some() || probe {
        None
    } else {
        Some(name::of(&ctx.db, c, &messages).await?)
    };
    let facts = HeaderFacts {
        // A step of a per-patch comparison is about its own patch; a
        // series, range or tree is named by `named`, not its first patch.
        subject: match c.step {
            Some(k) => patches
                .get(usize::try_from(k).unwrap_or(1).saturating_sub(1))
                .map(|m| m.subject.clone()),
            None if named.is_some() && patches.len() != 1 => None,
            None => patches.first().map(|m| m.subject.clone()),
        },
        named,
        series_sha256: db::patches::series_sha256(&ctx.db, c.series_id).await?,
        report_url: Some(ctx.config.link(&format!("/comparisons/{}", c.id))),
        runs_from_steps: db::runs::borrowed_steps(&ctx.db, c.id).await?,
    };
    let limit = ctx.config.report_time_limit;
    // None for an A/A comparison itself and for a machine without one.
    let floors = match (latest_aa, c.machine_id) {
        (Some(_), Some(machine)) => {
            noise_floors(ctx, machine, c.created_at, c.machine_inventory.as_ref()).await?
        }
        _ => NoiseFloors::none(&ctx.config),
    };
    build(
        &ctx.db,
        c,
        &facts,
        &VerdictPolicy::default(),
        &floors,
        limit,
    )
    .await
}

/// Builds the report of comparison `c` from its stored runs; the
/// statistics run off the async workers, given up (503) after `limit`.
pub async fn build(
    db: &PgPool,
    c: &ComparisonRow,
    facts: &HeaderFacts,
    policy: &VerdictPolicy,
    floors: &NoiseFloors,
    limit: Duration,
) -> Result<ComparisonReport, Error> {
    let values = db::runs::report_values(db, c.id).await?;
    let metas = db::runs::of_comparison(db, c.id).await?;
    let unsupported = db::runs::unsupported(db, c.id).await?;

    let mut metrics: HashMap<i64, Vec<MetricValue>> = HashMap::new();
    for v in values {
        metrics.entry(v.run_id).or_default().push(MetricValue {
            name: v.name,
            value: v.value,
        });
    }
    let mut missing: HashMap<i64, Vec<String>> = HashMap::new();
    for (run_id, name) in unsupported {
        missing.entry(run_id).or_default().push(name);
    }
    let mut runs = Vec::with_capacity(metas.len());
    for m in metas {
        let result = run_result(&m, metrics.remove(&m.id), missing.remove(&m.id))?;
        runs.push(StoredRun {
            id: m.id,
            job_id: m.job_id,
            boot_seq: m.boot_seq,
            side: m.side,
            result,
        });
    }
    let what = format!("the report of comparison {}", c.id);
    let (c, facts, policy, floors) = (c.clone(), facts.clone(), *policy, floors.clone());
    let groups = offload::off_workers(limit, &what, move || {
        group_reports(&c, &facts, runs, &policy, &floors)
    })
    .await??;
    Ok(ComparisonReport { groups })
}

/// Splits the runs by (workload, mode, nr_task) and builds each report.
pub fn group_reports(
    c: &ComparisonRow,
    facts: &HeaderFacts,
    runs: Vec<StoredRun>,
    policy: &VerdictPolicy,
    floors: &NoiseFloors,
) -> Result<Vec<GroupReport>, Error> {
    let mut groups = group_by_report(runs, |run| &run.result);
    let workload_pos = |w: &str| {
        c.asked
            .workloads
            .iter()
            .position(|x| x == w)
            .unwrap_or(usize::MAX)
    };
    groups.sort_by(|(a, _), (b, _)| {
        workload_pos(&a.workload)
            .cmp(&workload_pos(&b.workload))
            .then(a.mode.as_str().cmp(b.mode.as_str()))
            .then(a.nr_task.cmp(&b.nr_task))
    });
    // A comparison that ended without one side of a cell (its patched
    // kernel never booted, the last step of a series it takes its runs from
    // failed) compares nothing there: its failure is the answer, not a
    // "cannot decide yet".
    let ended = matches!(
        c.status,
        ComparisonStatus::Failed | ComparisonStatus::Cancelled
    );
    groups
        .into_iter()
        .filter(|(_, runs)| {
            !ended
                || (runs.iter().any(|r| r.side == Side::Base)
                    && runs.iter().any(|r| r.side == Side::Patched))
        })
        .map(|(_, runs)| {
            let base: Vec<RunResult> = side_results(&runs, Side::Base);
            let patched: Vec<RunResult> = side_results(&runs, Side::Patched);
            let mut header = header(c, facts, &base, &patched);
            let floor = floors.get(
                &header.workload,
                header.mode,
                header.nr_task,
                header.measurement,
            );
            let kind = format!(
                "{} · {} · {} task{}",
                header.workload,
                header.mode.as_str(),
                header.nr_task,
                if header.nr_task == 1 { "" } else { "s" }
            );
            // A comparison that may add boots spends its level over the
            // looks it may take. A cell's looks are those taken while it
            // was measured: boots are added only to undecided cells, so a
            // cell decided earlier is judged at the look that decided it.
            let first = c.runs_added_at.first().copied().unwrap_or(c.runs_per_side);
            let n = base.len().min(patched.len());
            let taken = c
                .runs_added_at
                .iter()
                .filter(|&&at| usize::try_from(at).is_ok_and(|at| at < n))
                .count();
            let look = Look::of_comparison(
                u32::try_from(first).unwrap_or(0),
                c.asked.max_runs,
                u32::try_from(taken).unwrap_or(u32::MAX - 1),
            );
            header.looks = (look.of > 1).then_some([look.look.min(look.of), look.of]);
            let policy = judging(*policy, header.measurement, floor.map(|f| f.percent), look);
            let mut delta = calibration::delta(
                header.measurement,
                &kind,
                floor,
                &policy,
                floors.max_age_days(),
            );
            if c.kind == ComparisonKind::Aa {
                // It measures the noise; judging it against an earlier
                // measurement of the same would be circular.
                delta.source = format!(
                    "δ {}%: the mode's default, as for every A/A comparison (it measures the \
                     noise that calibrates others)",
                    delta_text(delta.default_percent)
                );
            }
            header.delta_source = Some(delta.source);
            header.delta_aa = delta.aa_comparison;
            let comparison = build_comparison(header, &base, &patched, &policy)
                .map_err(|e| Error::Internal(format!("comparison {}: {e}", c.id)))?;
            Ok(GroupReport { comparison, runs })
        })
        .collect()
}

fn side_results(runs: &[StoredRun], side: Side) -> Vec<RunResult> {
    runs.iter()
        .filter(|r| r.side == side)
        .map(|r| r.result.clone())
        .collect()
}

/// The RunResult a stored run stands for, rebuilt from its columns and its
/// projected metric values (the statistics need nothing else).
fn run_result(
    m: &RunMeta,
    metrics: Option<Vec<MetricValue>>,
    unsupported: Option<Vec<String>>,
) -> Result<RunResult, Error> {
    let parse = |what: &str, s: &str| Error::Internal(format!("stored {what} {s:?}"));
    let mode: TaskMode = serde_json::from_value(serde_json::Value::String(m.mode.clone()))
        .map_err(|_| parse("mode", &m.mode))?;
    let measurement: MeasurementMode =
        serde_json::from_value(serde_json::Value::String(m.measurement.clone()))
            .map_err(|_| parse("measurement", &m.measurement))?;
    Ok(RunResult {
        workload: m.workload.clone(),
        mode,
        nr_task: u32::try_from(m.nr_task).map_err(|_| parse("nr_task", &m.nr_task.to_string()))?,
        warmup_seconds: m
            .warmup_seconds
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or(0),
        seconds: m.seconds.and_then(|s| u32::try_from(s).ok()).unwrap_or(0),
        measurement,
        kernel: m.kernel.clone().map(|k| k.0),
        samples: Vec::new(),
        metrics: metrics.unwrap_or_default(),
        series: Vec::new(),
        unsupported: unsupported.unwrap_or_default(),
        profile_event: m.profile_event.clone(),
        warnings: m.warnings.clone(),
    })
}

/// The report header: what the runs know, plus the machine, the kernels'
/// names and the patch subject from the comparison.
pub fn header(
    c: &ComparisonRow,
    facts: &HeaderFacts,
    base: &[RunResult],
    patched: &[RunResult],
) -> ReportHeader {
    let machine = c
        .machine_name
        .clone()
        .unwrap_or_else(|| "(not claimed yet)".into());
    let mut h = header_from_runs(&machine, base, patched);
    let inventory = c.machine_inventory.as_ref();
    let nr_cpu = inventory
        .and_then(|i| i.get("nr_cpu"))
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    h.machine_description = inventory.map(machine_description);
    h.nr_task_requested = nr_cpu.and_then(|cpus| {
        c.params.0.nr_task.iter().find_map(|n| match n {
            NrTask::Percent(_) if n.resolve(cpus) == h.nr_task => Some(n.to_string()),
            _ => None,
        })
    });
    let short_sha: String = facts.series_sha256.chars().take(10).collect();
    // A short commit, as kernel people write one: a 40-digit id with a
    // series hash after it is no name a reader can use.
    let (base_id, base_subject) = (naming::base_kernel(&c.base.0), None);
    h.base = KernelLabel {
        id: base_id.clone(),
        subject: base_subject,
    };
    h.patched = KernelLabel {
        // An A/A boots the base on both sides: its empty series' hash
        // names no kernel.
        id: match c.kind {
            ComparisonKind::Aa => base_id.clone(),
            ComparisonKind::Ab => format!("{base_id}+{short_sha}"),
        },
        subject: facts.subject.clone(),
    };
    if let Some(k) = c.step {
        // A step boots patches 1..k-1 against patches 1..k.
        h.base.id = with_patches(&base_id, k - 1);
        h.patched.id = with_patches(&base_id, k);
    }
    // A git range's commit (a step's, a probe's, the range's end) is what
    // 0-day's `commit:` line names.
    if let Some(commit) = &c.commit_sha {
        h.patched.id = commit.clone();
    }
    h.base_source = Some(naming::base(None, &c.base.0));
    h.patch_subject = facts.subject.clone();
    if let Some(named) = &facts.named {
        h.base_source = Some(named.base.clone());
        // A tree's head is named by its own subject on the commit line.
        if named.name.kind == NameKind::Tree {
            h.patched.subject = named.commit_subject.clone();
        }
        h.name = Some(named.name.clone());
    }
    h.report_url = facts.report_url.clone();
    h.runs_steps = c.runs_steps();
    h.runs_from_steps = facts.runs_from_steps;
    h.code_layout = Some(code_layout_line(c.asked.aligns_functions(), h.measurement));
    h
}

/// A kernel's label with the first `n` patches of its series:
/// `linux-source-6.1+patches 1..2`.
fn with_patches(base: &str, n: i32) -> String {
    match n {
        ..=0 => base.to_string(),
        1 => format!("{base}+patch 1"),
        n => format!("{base}+patches 1..{n}"),
    }
}

/// `16 CPUs (AMD EPYC 7763), 64G memory, x86_64, host kernel 6.1.0`.
fn machine_description(inv: &serde_json::Value) -> String {
    let s = |k: &str| {
        inv.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
    };
    let n = |k: &str| inv.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    format!(
        "{} CPUs ({}), {} memory, {}, host kernel {}",
        n("nr_cpu"),
        s("cpu_model"),
        patchperf_common::report::format::memory(n("memory_bytes")),
        s("arch"),
        s("kernel_release")
    )
}
