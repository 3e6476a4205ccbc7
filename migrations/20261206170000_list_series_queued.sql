-- A list reading its history has thousands of series waiting beside the
-- few queued. Counting the queued ones (before each series a round starts)
-- and finding a version's next one (in every read of a series) went
-- through all of them, so each round was slower than the last.
CREATE INDEX list_series_queued ON list_series (list_id) WHERE state = 'queued';
CREATE INDEX list_series_previous ON list_series (previous_id);
