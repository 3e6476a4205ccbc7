-- A tracked tree's kernels are built over one commit, its anchor: the
-- commits tested since ride on both sides as patches, so each new head
-- costs the runner one incremental build on the anchor's build tree (the
-- last head's kernel is already in its cache under the same series)
-- instead of a checkout and a full build of the last head. The anchor
-- moves to the last tested head when the carried commits grow too many.
ALTER TABLE trees ADD COLUMN anchor_commit text CHECK (anchor_commit ~ '^[0-9a-f]{40,64}$');
UPDATE trees SET anchor_commit = tested_commit;
ALTER TABLE trees ALTER COLUMN anchor_commit SET NOT NULL;

-- How the runner builds a comparison when that differs from what it is
-- about: its base (the range's A) is `built_over` with `carried_series_id`
-- on it, and the series goes on after those.
ALTER TABLE comparisons
    ADD COLUMN built_over text CHECK (built_over ~ '^[0-9a-f]{40,64}$'),
    ADD COLUMN carried_series_id bigint REFERENCES patch_series (id),
    ADD CONSTRAINT comparisons_built_over_carries
        CHECK ((built_over IS NULL) = (carried_series_id IS NULL));
