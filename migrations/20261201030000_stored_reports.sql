-- Reports are built once per change of what they are built from and kept
-- here, so that pages, the JSON API, the text report and plots read them
-- instead of running the statistics on every request, and a server restart
-- or a second server behind the same database rebuilds nothing.
--
-- `inputs` is what the report was built from (the comparison row's last
-- change, its runs so far, the A/A comparison that set the noise floor) as
-- the server's `domain::report::cache::Inputs`; a reader uses the body only
-- while the inputs it reads now are equal. `body` is the built report in
-- CBOR (self-describing, keeps every f64 exactly, NaN and infinities too).
CREATE TABLE comparison_reports (
    comparison_id  bigint PRIMARY KEY REFERENCES comparisons (id) ON DELETE CASCADE,
    inputs         jsonb NOT NULL,
    body           bytea NOT NULL,
    build_ms       integer NOT NULL CHECK (build_ms >= 0),
    built_at       timestamptz NOT NULL DEFAULT now()
);

-- Comparisons whose report is stale: a row is added by whatever changes a
-- report's inputs (a run stored, a status change, boots added, the
-- machine's A/A comparison finishing) and taken away by the background
-- builder as it takes the comparison. The builder reads this table, not
-- `comparisons`, so its work follows what changed rather than the size of
-- the database; and it never locks a comparison row, which a claim (which
-- skips locked comparisons) would otherwise pass over.
-- `due_at` is now for a change; a build that failed is tried again a
-- minute later rather than at once (or never).
CREATE TABLE stale_reports (
    comparison_id  bigint PRIMARY KEY REFERENCES comparisons (id) ON DELETE CASCADE,
    due_at         timestamptz NOT NULL DEFAULT now()
);
-- Every comparison stored before gets its report built once.
INSERT INTO stale_reports (comparison_id) SELECT id FROM comparisons;

-- The verdict columns now hold the verdict of the newest stored report of
-- a finished comparison; whether it is current is the builder's business
-- (`stale_reports`), so the view that re-derived it per row goes, and with
-- it the planner's one-row estimate that made every listing and keeper
-- scan grow with the whole table.
DROP VIEW current_verdicts;
ALTER TABLE comparisons DROP COLUMN verdict_for, DROP COLUMN verdict_aa;
