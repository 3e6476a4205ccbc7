-- A tracked tree whose branch was rewritten (a forced push): the new head
-- is measured against the merge base with the last tested head, and the
-- tree says so (issue 24, item 7).
ALTER TABLE trees ADD COLUMN rewrite_note text;
