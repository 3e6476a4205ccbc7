-- The server reads every state column into an enum (patchperf-common's
-- JobState, FailureReason, Side, ComparisonStatus, ComparisonKind,
-- OverallVerdict), so a spelling it does not know would fail the read. The
-- other state columns were checked from the start; these two were not.
ALTER TABLE jobs
    ADD CONSTRAINT jobs_failure_reason_known
    CHECK (failure_reason IN ('patch-does-not-apply', 'fetch-failed', 'build-failed',
                              'boot-failed', 'kernel-panic', 'timeout', 'no-results',
                              'unsupported', 'cancelled', 'lease-expired', 'other'));
ALTER TABLE job_events
    ADD CONSTRAINT job_events_state_known
    CHECK (state IN ('queued', 'claimed', 'fetching', 'applying', 'building',
                     'booting', 'running', 'uploading', 'done', 'failed'));
