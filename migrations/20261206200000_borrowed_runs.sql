-- A per-patch comparison's whole series, taken from its steps: step 1
-- boots the base, the last step boots the whole series, so the parent
-- reads step 1's base runs and the last step's patched runs instead of
-- booting both kernels again. One row per side the comparison borrows;
-- a comparison without rows (every one queued before this) reads only its
-- own runs.
CREATE TABLE borrowed_runs (
    comparison_id       bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    side                text NOT NULL CHECK (side IN ('base', 'patched')),
    from_comparison_id  bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    PRIMARY KEY (comparison_id, side)
);
CREATE INDEX borrowed_runs_from ON borrowed_runs (from_comparison_id);

-- The ids of comparison `id`'s runs: its own and those it borrows, each an
-- index scan of `runs` (an OR over both would scan the table).
CREATE FUNCTION runs_of(id bigint) RETURNS TABLE (run_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT r.id FROM runs r WHERE r.comparison_id = runs_of.id
    UNION ALL
    SELECT r.id FROM borrowed_runs b
    JOIN runs r ON r.comparison_id = b.from_comparison_id AND r.side = b.side
    WHERE b.comparison_id = runs_of.id
$$;
