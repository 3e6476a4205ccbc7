-- The dashboard's worst-verdict-first order (`?sort=verdict`) as an index:
-- without it, each page of that order sorted every listed comparison
-- (~100 ms at 10^5 of them); with it, a page reads its rows in order.
-- The rank is OverallVerdict::ALL's order (regressions first); a comparison
-- without a stored verdict (not finished) ranks with the undecided.
CREATE FUNCTION verdict_rank(verdict text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE coalesce(verdict, 'undecided')
    WHEN 'regression' THEN 0
    WHEN 'undecided' THEN 1
    WHEN 'improvement' THEN 2
    WHEN 'no change' THEN 3
    WHEN 'no results' THEN 4
END;

CREATE INDEX comparisons_verdict_rank ON comparisons (verdict_rank(verdict), id DESC)
    WHERE parent_id IS NULL AND bisection_id IS NULL;
