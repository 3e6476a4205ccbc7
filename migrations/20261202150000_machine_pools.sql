-- Pools of machines (issue 28, item 3): labels an admin gives a machine,
-- and the pool a comparison (or a tracked tree or a followed list, for
-- each comparison it queues) asks for instead of one machine (the first
-- machine with that label to claim it runs all of it). Expand only: the
-- release before never reads `machine_fleet`, and names the columns of
-- `comparisons`, `trees` and `lists` it reads; it does not claim by pool,
-- so during a rolling upgrade it may hand a pooled comparison to any
-- machine (as it would an unpinned one).
ALTER TABLE machine_fleet ADD COLUMN labels text[] NOT NULL DEFAULT '{}';
ALTER TABLE comparisons ADD COLUMN pool text;
ALTER TABLE trees ADD COLUMN pool text;
ALTER TABLE lists ADD COLUMN pool text;
