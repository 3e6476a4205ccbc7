-- Boots added while undecided measure only the workloads with an
-- undecided cell: a job's own workloads, NULL for all of its comparison's.
ALTER TABLE jobs ADD COLUMN workloads text[];
