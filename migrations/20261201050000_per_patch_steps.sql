-- A per-patch comparison of an N-patch series is the whole-series
-- comparison (the parent) and N step comparisons: step k boots patches
-- 1..k-1 (the series `base_series_id`, NULL for the first step: the
-- pristine base) against patches 1..k (`series_id`). A step is an ordinary
-- comparison otherwise: its own jobs, runs, report and verdict.
ALTER TABLE comparisons
    ADD COLUMN parent_id bigint REFERENCES comparisons (id) ON DELETE CASCADE,
    ADD COLUMN step integer CHECK (step >= 1),
    ADD COLUMN base_series_id bigint REFERENCES patch_series (id),
    ADD CONSTRAINT comparisons_step_has_parent CHECK ((parent_id IS NULL) = (step IS NULL));

-- The steps of a parent, in order (its page, the claim order, the failure
-- of the steps after one whose patch does not apply).
CREATE UNIQUE INDEX comparisons_steps ON comparisons (parent_id, step) WHERE parent_id IS NOT NULL;
