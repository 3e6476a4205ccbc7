-- A token for Prometheus: it reads /metrics and nothing else, so a scrape
-- configuration holds no key that could submit, cancel or administer.
ALTER TABLE tokens DROP CONSTRAINT tokens_kind_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_kind_check
    CHECK (kind IN ('runner', 'ci', 'admin', 'metrics'));
