-- The machine page lists a machine's most recent jobs
-- (`WHERE machine_id = $1 ORDER BY updated_at DESC, id DESC LIMIT n`);
-- without this index that is a scan of every job ever run.
CREATE INDEX jobs_machine_recent ON jobs (machine_id, updated_at DESC, id DESC);
