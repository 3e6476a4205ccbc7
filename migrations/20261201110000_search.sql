-- Finding a comparison by what a kernel developer remembers of the patch:
-- a word of its subject or its author (any part, case-insensitively:
-- trigram indexes answer `lower(x) LIKE '%word%'` without reading every
-- patch), or its Message-Id (exact).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX patches_subject_search ON patches USING gin (lower(subject) gin_trgm_ops);
CREATE INDEX patches_author_search ON patches USING gin (lower(author) gin_trgm_ops);
CREATE INDEX patches_message_id ON patches (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX comparisons_series ON comparisons (series_id);
