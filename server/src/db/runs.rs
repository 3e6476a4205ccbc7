//! `runs` and the tables projected from each run: `metric_values`,
//! `unsupported_metrics`, `run_series`. A comparison's runs, as its report
//! reads them, are its own and those it borrows (`borrowed_runs`: a
//! per-patch comparison's whole series is step 1's base runs and the last
//! step's patched runs).

use patchperf_common::run::{KernelIdentity, RunResult, Side};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};

/// Where a run belongs.
#[derive(Debug, Clone)]
pub struct RunKey {
    /// Comparison.
    pub comparison_id: i64,
    /// Job that uploaded it.
    pub job_id: i64,
    /// Boot it ran in.
    pub boot_seq: i32,
    /// Which kernel it ran on.
    pub side: Side,
    /// Attempt of the job that uploaded it.
    pub attempt: i32,
    /// Machine that ran it.
    pub machine_id: i64,
}

/// Stores a run and its projections, unless the same (boot, workload,
/// nr_task, mode) is stored already. Returns the run id and whether this
/// call stored it.
pub async fn insert(
    conn: &mut PgConnection,
    key: &RunKey,
    result: &RunResult,
) -> Result<(i64, bool), sqlx::Error> {
    let nr_task = i32::try_from(result.nr_task).unwrap_or(i32::MAX);
    let kernel = result
        .kernel
        .as_ref()
        .map(|k| serde_json::to_value(k).unwrap_or(serde_json::Value::Null));
    // Bounded at upload (`RunResult::validate`); NULL rather than a wrong
    // number should a caller skip that.
    let seconds = i32::try_from(result.seconds).ok();
    let warmup_seconds = i32::try_from(result.warmup_seconds).ok();
    // What only `result` holds (the samples, the unsupported names as
    // uploaded); the metrics and series go to their tables alone.
    let unprojected = RunResult {
        workload: result.workload.clone(),
        mode: result.mode,
        nr_task: result.nr_task,
        warmup_seconds: result.warmup_seconds,
        seconds: result.seconds,
        measurement: result.measurement,
        kernel: result.kernel.clone(),
        samples: result.samples.clone(),
        metrics: Vec::new(),
        series: Vec::new(),
        unsupported: result.unsupported.clone(),
        profile_event: result.profile_event.clone(),
        warnings: result.warnings.clone(),
    };
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO runs (comparison_id, job_id, boot_seq, side, workload, nr_task, mode,
                             measurement, kernel, attempt, machine_id, result, seconds,
                             warmup_seconds, profile_event, warnings)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
           ON CONFLICT (comparison_id, boot_seq, workload, nr_task, mode) DO NOTHING
           RETURNING id"#,
        key.comparison_id,
        key.job_id,
        key.boot_seq,
        key.side.as_str(),
        result.workload,
        nr_task,
        result.mode.as_str(),
        result.measurement.as_str(),
        kernel,
        key.attempt,
        key.machine_id,
        Json(&unprojected) as _,
        seconds,
        warmup_seconds,
        result.profile_event,
        &result.warnings
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(run_id) = inserted else {
        let id = sqlx::query_scalar!(
            "SELECT id FROM runs
             WHERE comparison_id = $1 AND boot_seq = $2 AND workload = $3 AND nr_task = $4
               AND mode = $5",
            key.comparison_id,
            key.boot_seq,
            result.workload,
            nr_task,
            result.mode.as_str()
        )
        .fetch_one(&mut *conn)
        .await?;
        return Ok((id, false));
    };

    let names: Vec<String> = result.metrics.iter().map(|m| m.name.clone()).collect();
    let values: Vec<f64> = result.metrics.iter().map(|m| m.value).collect();
    sqlx::query!(
        "INSERT INTO metric_values (comparison_id, run_id, side, workload, nr_task, name, value)
         SELECT $1, $2, $3, $4, $5, name, value FROM UNNEST($6::text[], $7::float8[]) AS m(name, value)",
        key.comparison_id,
        run_id,
        key.side.as_str(),
        result.workload,
        nr_task,
        &names,
        &values
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO unsupported_metrics (comparison_id, run_id, name)
         SELECT DISTINCT $1::bigint, $2::bigint, name FROM UNNEST($3::text[]) AS u(name)",
        key.comparison_id,
        run_id,
        &result.unsupported
    )
    .execute(&mut *conn)
    .await?;
    // One statement for every series: Postgres cannot unnest a ragged 2-D
    // array, so the points travel as one flat array cut by (start, length).
    let mut starts = Vec::with_capacity(result.series.len());
    let mut lengths = Vec::with_capacity(result.series.len());
    let mut points = Vec::new();
    for s in &result.series {
        // Bounded at upload (`RunResult::validate`: 1,000 series of 36,000
        // points at most), so these fit an `integer`.
        starts.push(i32::try_from(points.len()).unwrap_or(i32::MAX));
        lengths.push(i32::try_from(s.points.len()).unwrap_or(i32::MAX));
        points.extend_from_slice(&s.points);
    }
    let names: Vec<&str> = result.series.iter().map(|s| s.name.as_str()).collect();
    let intervals: Vec<f64> = result.series.iter().map(|s| s.interval_seconds).collect();
    sqlx::query!(
        "INSERT INTO run_series (run_id, name, interval_seconds, points)
         SELECT $1, s.name, s.interval_seconds, ($6::float8[])[s.start + 1 : s.start + s.length]
         FROM UNNEST($2::text[], $3::float8[], $4::int[], $5::int[])
              AS s(name, interval_seconds, start, length)",
        run_id,
        &names as &[&str],
        &intervals,
        &starts,
        &lengths,
        &points
    )
    .execute(&mut *conn)
    .await?;
    Ok((run_id, true))
}

/// (boot seq, workload) of every run a job uploaded.
pub async fn boot_workloads_of_job(
    db: impl PgExecutor<'_>,
    job_id: i64,
) -> Result<Vec<(i32, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT DISTINCT boot_seq, workload FROM runs WHERE job_id = $1",
        job_id
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.boot_seq, r.workload)).collect())
}

/// Runs stored per job of a comparison: (job id, base runs, patched runs).
pub async fn counts_per_job(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<(i64, i64, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT job_id,
                  count(*) FILTER (WHERE side = 'base') AS "base!",
                  count(*) FILTER (WHERE side = 'patched') AS "patched!"
           FROM runs WHERE comparison_id = $1 GROUP BY job_id"#,
        comparison_id
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.job_id, r.base, r.patched))
        .collect())
}

/// One metric value of one run, as a report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportValue {
    /// The run it came from.
    pub run_id: i64,
    /// Which kernel it ran on.
    pub side: Side,
    /// Workload name.
    pub workload: String,
    /// Task count.
    pub nr_task: i32,
    /// Metric name.
    pub name: String,
    /// The value.
    pub value: f64,
}

/// Every metric value of a comparison, sorted by (workload, nr_task,
/// metric, side, run): the one indexed query a report is built from. The
/// sort happens here rather than in SQL: on 12 000 values among 600 000
/// the index scan takes about 5 ms and an SQL sort would add 30 ms more.
pub async fn report_values(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<ReportValue>, sqlx::Error> {
    let mut values = sqlx::query_as!(
        ReportValue,
        r#"SELECT run_id AS "run_id!", side AS "side!: Side", workload AS "workload!",
                  nr_task AS "nr_task!", name AS "name!", value AS "value!"
           FROM metric_values WHERE comparison_id = $1
           UNION ALL
           SELECT v.run_id, v.side, v.workload, v.nr_task, v.name, v.value
           FROM borrowed_runs b
           JOIN metric_values v ON v.comparison_id = b.from_comparison_id AND v.side = b.side
           WHERE b.comparison_id = $1"#,
        comparison_id
    )
    .fetch_all(db)
    .await?;
    values.sort_by(|a, b| {
        (&a.workload, a.nr_task, &a.name, a.side, a.run_id).cmp(&(
            &b.workload,
            b.nr_task,
            &b.name,
            b.side,
            b.run_id,
        ))
    });
    Ok(values)
}

/// A stored run without its values.
#[derive(Debug, Clone)]
pub struct RunMeta {
    /// Run id.
    pub id: i64,
    /// Job that uploaded it.
    pub job_id: i64,
    /// Comparison-wide boot position.
    pub boot_seq: i32,
    /// Which kernel it ran on.
    pub side: Side,
    /// Workload.
    pub workload: String,
    /// Task count.
    pub nr_task: i32,
    /// `process` or `thread`.
    pub mode: String,
    /// Measurement mode spelling.
    pub measurement: String,
    /// The kernel the run happened on.
    pub kernel: Option<Json<KernelIdentity>>,
    /// Event perf sampled, if the run was profiled.
    pub profile_event: Option<String>,
    /// Measured seconds (NULL for a run stored, before uploads were
    /// bounded, with seconds no `integer` holds).
    pub seconds: Option<i32>,
    /// Warm-up seconds (NULL as for `seconds`).
    pub warmup_seconds: Option<i32>,
    /// The run's warnings.
    pub warnings: Vec<String>,
}

/// Every run of a comparison, its own and those it borrows, in boot order
/// (a borrowed run keeps its own comparison's boot number).
pub async fn of_comparison(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<RunMeta>, sqlx::Error> {
    sqlx::query_as!(
        RunMeta,
        r#"SELECT r.id AS "id!", r.job_id AS "job_id!", r.boot_seq AS "boot_seq!",
                  r.side AS "side!: Side", r.workload AS "workload!", r.nr_task AS "nr_task!",
                  r.mode AS "mode!", r.measurement AS "measurement!",
                  r.kernel AS "kernel: Json<KernelIdentity>",
                  r.profile_event, r.seconds, r.warmup_seconds, r.warnings AS "warnings!"
           FROM runs_of($1) o JOIN runs r ON r.id = o.run_id
           ORDER BY r.boot_seq, r.workload, r.nr_task, r.id"#,
        comparison_id
    )
    .fetch_all(db)
    .await
}

/// (run id, metric name) of every unsupported metric of a comparison's
/// runs, borrowed ones included.
pub async fn unsupported(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
) -> Result<Vec<(i64, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT run_id AS "run_id!", name AS "name!" FROM unsupported_metrics
           WHERE comparison_id = $1
           UNION ALL
           SELECT u.run_id, u.name
           FROM borrowed_runs b
           JOIN runs r ON r.comparison_id = b.from_comparison_id AND r.side = b.side
           JOIN unsupported_metrics u ON u.run_id = r.id
           WHERE b.comparison_id = $1"#,
        comparison_id
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.run_id, r.name)).collect())
}

/// One per-second series of one run.
#[derive(Debug, Clone)]
pub struct PerSecondRow {
    /// Run id.
    pub run_id: i64,
    /// Metric name.
    pub name: String,
    /// Seconds between points.
    pub interval_seconds: f64,
    /// The points.
    pub points: Vec<f64>,
}

/// The series called one of `names` of every run of a comparison (borrowed
/// ones included), in boot order: a page plotting one series per report
/// reads them all at once.
pub async fn per_second(
    db: impl PgExecutor<'_>,
    comparison_id: i64,
    names: &[String],
) -> Result<Vec<PerSecondRow>, sqlx::Error> {
    sqlx::query_as!(
        PerSecondRow,
        "SELECT s.run_id, s.name, s.interval_seconds, s.points
         FROM runs_of($1) o JOIN runs r ON r.id = o.run_id JOIN run_series s ON s.run_id = r.id
         WHERE s.name = ANY ($2)
         ORDER BY r.boot_seq, r.id",
        comparison_id,
        names
    )
    .fetch_all(db)
    .await
}

/// Comparison `id` reads its `side` runs from comparison `from`'s.
pub async fn borrow(
    conn: &mut PgConnection,
    id: i64,
    side: Side,
    from: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO borrowed_runs (comparison_id, side, from_comparison_id) VALUES ($1, $2, $3)",
        id,
        side.as_str(),
        from
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The comparisons comparison `id` borrows runs from, as (side,
/// comparison), base first; empty for one that boots its own.
pub async fn borrowed_from(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Vec<(Side, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT side AS "side: Side", from_comparison_id FROM borrowed_runs
           WHERE comparison_id = $1 ORDER BY side"#,
        id
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.side, r.from_comparison_id))
        .collect())
}

/// The steps comparison `id` borrows its base and its patched runs from,
/// by step number (`[1, 3]`); `None` for one that boots its own.
pub async fn borrowed_steps(
    db: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<[u32; 2]>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT b.side AS "side: Side", c.step FROM borrowed_runs b
           JOIN comparisons c ON c.id = b.from_comparison_id
           WHERE b.comparison_id = $1"#,
        id
    )
    .fetch_all(db)
    .await?;
    let step = |side: Side| {
        rows.iter()
            .find(|r| r.side == side)
            .and_then(|r| r.step)
            .and_then(|s| u32::try_from(s).ok())
    };
    Ok(step(Side::Base)
        .zip(step(Side::Patched))
        .map(|(b, p)| [b, p]))
}

/// How long the newest kernel build whose runs machine `machine_id`
/// uploaded took, in seconds (`kernel.build_seconds`).
pub async fn last_build_seconds(
    db: impl PgExecutor<'_>,
    machine_id: i64,
) -> Result<Option<f64>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT m.value FROM metric_values m JOIN runs r ON r.id = m.run_id
           WHERE r.machine_id = $1 AND m.name = 'kernel.build_seconds'
           ORDER BY r.id DESC LIMIT 1"#,
        machine_id
    )
    .fetch_optional(db)
    .await
}
