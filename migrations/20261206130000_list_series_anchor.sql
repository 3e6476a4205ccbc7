-- A series cross-posted to two followed lists (a subsystem list and LKML)
-- is one posting: found by its cover letter's (or first patch's)
-- Message-ID across lists, measured and answered once.
CREATE INDEX list_series_anchor ON list_series (anchor);
