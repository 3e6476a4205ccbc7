-- The size of a finished comparison's headline change (the |change| of its
-- most important report's headline metric, in percent or points), the
-- second key of the dashboard's worst-verdict-first order after the
-- verdict (issue 41, item 6): the larger regression first, as every other
-- list is ordered (`common/src/stats/severity.rs::worst_first`). Stored by
-- the report builder with the verdict; NULL when nothing was measured, and
-- for what the release before finishes until its report is built again
-- (listed after the sized ones of its verdict). A new index beside
-- `comparisons_verdict_rank`, which the release before still reads with;
-- the next release drops that one.
ALTER TABLE comparisons ADD COLUMN change_size double precision;

-- The finished comparisons' sizes from the headline columns' text
-- (`+4.8%`, `-11.3`), for those finished before this.
UPDATE comparisons c
SET change_size = abs(substring(h.columns ->> 'change' FROM '^[+-]?[0-9]+(?:\.[0-9]+)?')::double precision)
FROM comparison_headlines h
WHERE h.comparison_id = c.id AND h.columns ->> 'change' ~ '^[+-]?[0-9]+(\.[0-9]+)?%?$';

CREATE INDEX comparisons_worst_first
    ON comparisons (verdict_rank(verdict), change_size DESC NULLS LAST, id DESC)
    WHERE parent_id IS NULL AND bisection_id IS NULL;
