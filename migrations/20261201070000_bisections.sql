-- A bisection looks for the first commit (or patch) of a series that moves
-- one metric of one (workload, mode, nr_task). The series is stored like a
-- comparison's: commit k is patches 1..k on the base (the good end); the
-- bad end is all N. Each probe is an ordinary comparison of the good end
-- against commit k (`bisection_id`, `probe` = k), so probes get jobs, runs,
-- more runs while undecided, stored reports and verdicts like any other;
-- the driver (domain::bisect) reads their reports and queues the next.
CREATE TABLE bisections (
    id              bigserial PRIMARY KEY,
    status          text NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
    -- The good end as a base source (a git commit or a tarball).
    base            jsonb NOT NULL,
    series_id       bigint NOT NULL REFERENCES patch_series (id),
    -- For a git range: the commit each patch is (commits[k] is patch k+1).
    commits         text[] NOT NULL DEFAULT '{}',
    git_range       text,
    workload        text NOT NULL,
    metric          text NOT NULL,
    -- Parameters of every probe (one nr_task, one mode).
    params          jsonb NOT NULL,
    runs_per_side   integer NOT NULL CHECK (runs_per_side BETWEEN 3 AND 100),
    max_runs_per_side integer NOT NULL CHECK (max_runs_per_side BETWEEN runs_per_side AND 100),
    backend         text,
    config_fragment text,
    -- Named at submission, or the machine of the first probe once claimed.
    machine_id      bigint REFERENCES machines (id),
    -- The comparison it was started from, whose report is its end check.
    from_comparison_id bigint REFERENCES comparisons (id),
    order_seed      bigint NOT NULL,
    outcome         jsonb,
    submitted_by    bigint NOT NULL REFERENCES tokens (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);

-- The driver's poll: the bisections still running.
CREATE INDEX bisections_running ON bisections (id) WHERE status = 'running';

ALTER TABLE comparisons
    ADD COLUMN bisection_id bigint REFERENCES bisections (id) ON DELETE CASCADE,
    ADD COLUMN probe integer CHECK (probe >= 1),
    ADD CONSTRAINT comparisons_probe_has_bisection CHECK ((bisection_id IS NULL) = (probe IS NULL));

CREATE INDEX comparisons_probes ON comparisons (bisection_id, id) WHERE bisection_id IS NOT NULL;
