-- Cheaper uploads and run reads.
--
-- 1. The run metadata a report reads becomes columns: `of_comparison` took
--    45 ms on a 29k-value comparison to dig `profile_event` and `warnings`
--    out of the TOASTed `result` JSON, 0.16 ms without them.
-- 2. `runs.result` stops repeating what `metric_values` and `run_series`
--    hold: its `metrics` and `series` are emptied (still a RunResult),
--    keeping what only it holds (the per-second samples, the unsupported
--    names as uploaded). Every upload compressed and TOASTed the lot again.
-- 3. `metric_values` has one index and one foreign key instead of two of
--    each: the report reads `WHERE comparison_id = $1`, which the primary
--    key's first column serves; the per-row foreign key checks were most of
--    an upload's Postgres time (250 values: 2 x 250 lookups and locks of
--    the parent rows). The one foreign key left also checks what the two
--    did not: that the copied side, workload and nr_task are the run's.

ALTER TABLE runs
    ADD COLUMN profile_event text,
    ADD COLUMN warnings text[] NOT NULL DEFAULT '{}';

-- Runs stored before: the fields as the report read them (`->>` of
-- `profile_event`, the strings of `warnings`), anything malformed as absent.
UPDATE runs SET
    profile_event = CASE WHEN jsonb_typeof(result->'profile_event') = 'string'
                         THEN result->>'profile_event' END,
    warnings = CASE WHEN jsonb_typeof(result->'warnings') = 'array'
                    THEN ARRAY(SELECT e.v #>> '{}' FROM jsonb_array_elements(result->'warnings') AS e(v)
                               WHERE jsonb_typeof(e.v) = 'string')
                    ELSE '{}' END,
    result = result || '{"metrics": [], "series": []}';

COMMENT ON COLUMN runs.result IS
    'The RunResult as uploaded less its metrics and series, which metric_values and run_series hold';

-- The target of metric_values' foreign key: a run with the fields each of
-- its values copies.
ALTER TABLE runs ADD CONSTRAINT runs_value_key UNIQUE (id, comparison_id, side, workload, nr_task);

ALTER TABLE metric_values
    DROP CONSTRAINT metric_values_comparison_id_fkey,
    DROP CONSTRAINT metric_values_run_id_fkey,
    DROP CONSTRAINT metric_values_pkey,
    ADD CONSTRAINT metric_values_pkey PRIMARY KEY (comparison_id, run_id, name),
    ADD CONSTRAINT metric_values_run_fkey
        FOREIGN KEY (run_id, comparison_id, side, workload, nr_task)
        REFERENCES runs (id, comparison_id, side, workload, nr_task) ON DELETE CASCADE;
DROP INDEX metric_values_report;
