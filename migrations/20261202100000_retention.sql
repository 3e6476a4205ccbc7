-- Retention of bulky data (issue 28): a comparison finished long enough ago
-- may lose what only plots and raw downloads read (its runs' per-second
-- series, perf-profile values and per-second samples) while its stored
-- report, verdict and history points stay. `pruned_at` says it was, so that
-- its stored report is kept as it is and never built again from what is
-- left.
--
-- Expand only: a nullable column a server of the release before never
-- reads (see "Upgrading" in the README).
ALTER TABLE comparisons ADD COLUMN pruned_at timestamptz;
