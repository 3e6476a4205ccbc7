-- A comparison of a git range A..B: the server read the range's commits
-- into the series (one message per first-parent commit) and measures it
-- per patch. `git_range` keeps the range as resolved (full object ids, so
-- the report names what was measured even after a branch moved);
-- `commit_sha` is the commit whose tree a comparison's patched side is: a
-- step's commit, or B for the whole range.
ALTER TABLE comparisons
    ADD COLUMN git_range text CHECK (git_range ~ '^[0-9a-f]{40,64}\.\.[0-9a-f]{40,64}$'),
    ADD COLUMN commit_sha text CHECK (commit_sha ~ '^[0-9a-f]{40,64}$');
