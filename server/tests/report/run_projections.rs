//! The migration that moved run metadata out of `runs.result` into columns
//! and stopped `result` repeating the metrics and series: runs stored
//! before it keep every number, and their reports read the same after.

use sqlx::PgPool;

use crate::helpers::TestApp;

/// The migration under test.
const VERSION: i64 = 20261201040000;

/// Each run's (id, profile_event, warnings, samples, unsupported).
type Meta = (
    i64,
    Option<String>,
    Vec<String>,
    serde_json::Value,
    serde_json::Value,
);

async fn run_meta(pool: &PgPool) -> Vec<Meta> {
    sqlx::query_as(
        "SELECT id, profile_event, warnings, result->'samples', result->'unsupported'
         FROM runs ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn runs_stored_before_the_run_columns_keep_their_numbers_and_reports(pool: PgPool) {
    let app = TestApp::new(pool.clone()).await;
    let id = crate::completed_comparison(&app, "[PATCH] fs: dup faster").await;
    // Profiled runs with warnings, but the newest, which is as uploads
    // without them are.
    sqlx::query(
        "UPDATE runs SET profile_event = 'cpu-clock', warnings = ARRAY['perf: no PMU', 'w2']
         WHERE id < (SELECT max(id) FROM runs)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let report = format!("/api/v1/comparisons/{id}");
    let text = format!("/api/v1/comparisons/{id}/report.txt");
    let json_before = app.get_json(&report).await;
    let (_, text_before) = app.get(&text).await;
    let meta_before = run_meta(&pool).await;
    let values_before: Vec<(i64, String, f64)> =
        sqlx::query_as("SELECT run_id, name, value FROM metric_values ORDER BY run_id, name")
            .fetch_all(&pool)
            .await
            .unwrap();

    // The database as it was before: the whole RunResult in `result`
    // (the newest run's fields malformed, as nothing checked them), the
    // old keys of metric_values, no columns.
    sqlx::raw_sql(
        "UPDATE runs r SET result = result || jsonb_build_object(
             'profile_event', r.profile_event,
             'warnings', to_jsonb(r.warnings),
             'metrics', (SELECT jsonb_agg(jsonb_build_object('name', name, 'value', value))
                         FROM metric_values v WHERE v.run_id = r.id),
             'series', (SELECT jsonb_agg(jsonb_build_object('name', name,
                            'interval_seconds', interval_seconds, 'points', points))
                        FROM run_series s WHERE s.run_id = r.id));
         UPDATE runs SET result = result || '{\"profile_event\": 5, \"warnings\": \"oops\"}'
         WHERE id = (SELECT max(id) FROM runs);
         UPDATE runs SET result = result - 'profile_event' || '{\"warnings\": [\"w1\", 2]}'
         WHERE id = (SELECT min(id) FROM runs);
         ALTER TABLE metric_values
             DROP CONSTRAINT metric_values_run_fkey,
             DROP CONSTRAINT metric_values_pkey,
             ADD PRIMARY KEY (run_id, name),
             ADD FOREIGN KEY (comparison_id) REFERENCES comparisons (id) ON DELETE CASCADE,
             ADD FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE;
         CREATE INDEX metric_values_report
             ON metric_values (comparison_id, workload, nr_task, name, side);
         ALTER TABLE runs DROP CONSTRAINT runs_value_key,
             DROP COLUMN profile_event, DROP COLUMN warnings;",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(VERSION)
        .execute(&pool)
        .await
        .unwrap();

    patchperf_server::MIGRATOR.run(&pool).await.unwrap();

    // The columns hold what the JSON held; malformed fields read as absent,
    // a warning that is not a string is left out.
    let mut meta_expected = meta_before.clone();
    let first = &mut meta_expected[0];
    (first.1, first.2) = (None, vec!["w1".to_string()]);
    assert_eq!(run_meta(&pool).await, meta_expected);
    let emptied: bool = sqlx::query_scalar(
        "SELECT bool_and(result->'metrics' = '[]' AND result->'series' = '[]') FROM runs",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(emptied, "result still repeats the tables");
    let values_after: Vec<(i64, String, f64)> =
        sqlx::query_as("SELECT run_id, name, value FROM metric_values ORDER BY run_id, name")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(values_after, values_before);

    // Put the first run's columns back as they were: then every report
    // reads exactly as before.
    sqlx::query(
        "UPDATE runs SET profile_event = 'cpu-clock', warnings = ARRAY['perf: no PMU', 'w2']
         WHERE id = (SELECT min(id) FROM runs)",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(app.get_json(&report).await, json_before);
    assert_eq!(app.get(&text).await.1, text_before);
}
