-- A finished comparison's most important report in the columns a listing
-- shows (workload and tasks, change, interval, verdict, how many reports),
-- beside the sentence in `comparisons.headline` (issue 27, item 7). Stored
-- by the report builder with the verdict. A table of its own rather than a
-- column on `comparisons`, for the reason `machine_fleet` gives: the
-- release before reads `comparisons` through prepared `SELECT *`
-- statements that a new column would break during a rolling upgrade. A
-- comparison without a row (finished before this, or with nothing
-- measured) is listed with its sentence.
CREATE TABLE comparison_headlines (
    comparison_id bigint PRIMARY KEY REFERENCES comparisons (id) ON DELETE CASCADE,
    columns jsonb NOT NULL
);
