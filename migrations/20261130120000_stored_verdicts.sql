-- The overall verdict of a finished comparison, stored so that listings can
-- filter by it ("every regression on this machine") with one query instead
-- of building each comparison's report. It is valid while the comparison's
-- updated_at equals verdict_for and the machine's latest finished A/A
-- comparison (whose noise floor the verdict was judged against) is still
-- verdict_aa; the server recomputes it otherwise.
ALTER TABLE comparisons
    ADD COLUMN verdict text
        CHECK (verdict IN ('regression', 'improvement', 'no change', 'undecided', 'no results')),
    ADD COLUMN headline text,
    ADD COLUMN verdict_for timestamptz,
    ADD COLUMN verdict_aa bigint;
CREATE INDEX comparisons_verdict ON comparisons (verdict, id) WHERE verdict IS NOT NULL;
-- The stored verdicts that are still valid.
CREATE VIEW current_verdicts AS
SELECT c.id, c.verdict, c.headline
FROM comparisons c
WHERE c.verdict IS NOT NULL
  AND c.status IN ('done', 'failed', 'cancelled')
  AND c.verdict_for = c.updated_at
  AND c.verdict_aa IS NOT DISTINCT FROM
      (CASE WHEN c.kind = 'ab' THEN
           (SELECT max(a.id) FROM comparisons a
            WHERE a.machine_id = c.machine_id AND a.kind = 'aa' AND a.status = 'done')
       END);
