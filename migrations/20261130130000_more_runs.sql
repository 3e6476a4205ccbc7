-- More runs while undecided (design.md: a report "may ask for more while the
-- interval is too wide to decide"): when every job of a comparison is done
-- and a headline verdict is still undecided, the server adds boots, doubling
-- the runs a side up to max_runs_per_side. runs_added_at keeps the runs a
-- side at which boots were added, so reports can say the verdict was
-- reached by looking more than once.
ALTER TABLE comparisons
    ADD COLUMN max_runs_per_side integer,
    ADD COLUMN runs_added_at integer[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT comparisons_max_runs_covers_runs
        CHECK (max_runs_per_side IS NULL OR max_runs_per_side >= runs_per_side);
