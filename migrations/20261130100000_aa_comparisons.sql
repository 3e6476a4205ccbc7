-- A/A comparisons: both sides boot the base kernel. Their spread is the
-- machine's noise floor, which later A/B reports on the same machine use as
-- the smallest change worth calling (design.md: "the machine's own noise
-- floor from A/A runs"). An A/A comparison stores the empty patch series.
ALTER TABLE comparisons
    ADD COLUMN kind text NOT NULL DEFAULT 'ab' CHECK (kind IN ('ab', 'aa'));
-- The latest finished A/A comparison of a machine.
CREATE INDEX comparisons_aa ON comparisons (machine_id, id DESC)
    WHERE kind = 'aa' AND status = 'done';
