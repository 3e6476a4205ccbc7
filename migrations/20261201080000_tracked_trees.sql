-- A tracked tree: a branch of a git repository patchperf measures by
-- itself. Each new head is measured against the last one tested as a git
-- range comparison (`comparisons.tree_id`); the commits it tested, in
-- order, are `tree_commits`; what each measured is `history_points`, one
-- per (machine, measurement, workload, mode, nr_task, metric, commit).
CREATE TABLE trees (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    url             text NOT NULL,
    branch          text NOT NULL,
    workloads       text[] NOT NULL,
    params          jsonb NOT NULL,
    runs_per_side   integer NOT NULL CHECK (runs_per_side BETWEEN 3 AND 100),
    max_runs_per_side integer CHECK (max_runs_per_side BETWEEN runs_per_side AND 100),
    backend         text,
    config_fragment text,
    machine_id      bigint REFERENCES machines (id),
    -- At most one test per this many hours (0: every new head).
    min_hours       integer NOT NULL DEFAULT 0 CHECK (min_hours BETWEEN 0 AND 8760),
    -- Who else hears of a report on this tree, and where its JSON goes.
    cc              text[] NOT NULL DEFAULT '{}',
    webhook_url     text,
    -- The newest head queued for testing (at first the head when added).
    tested_commit   text NOT NULL CHECK (tested_commit ~ '^[0-9a-f]{40,64}$'),
    tested_at       timestamptz,
    polled_at       timestamptz,
    created_by      bigint NOT NULL REFERENCES tokens (id),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- The commits of a tree in the order they were tested (position 0: the
-- head when the tree was added, measured as the first range's base).
CREATE TABLE tree_commits (
    tree_id         bigint NOT NULL REFERENCES trees (id) ON DELETE CASCADE,
    position        integer NOT NULL CHECK (position >= 0),
    commit_sha      text NOT NULL,
    subject         text NOT NULL,
    author          text NOT NULL,
    committed_at    timestamptz,
    PRIMARY KEY (tree_id, position),
    UNIQUE (tree_id, commit_sha)
);

ALTER TABLE comparisons ADD COLUMN tree_id bigint REFERENCES trees (id) ON DELETE SET NULL,
    ADD COLUMN history_recorded boolean NOT NULL DEFAULT false;

-- Finished tree comparisons whose points are still to be written.
CREATE INDEX comparisons_history_due ON comparisons (id)
    WHERE tree_id IS NOT NULL AND NOT history_recorded AND parent_id IS NULL;

CREATE TABLE history_points (
    tree_id         bigint NOT NULL REFERENCES trees (id) ON DELETE CASCADE,
    machine_id      bigint NOT NULL REFERENCES machines (id),
    measurement     text NOT NULL,
    workload        text NOT NULL,
    mode            text NOT NULL,
    nr_task         integer NOT NULL,
    metric          text NOT NULL,
    position        integer NOT NULL,
    commit_sha      text NOT NULL,
    -- The runs on this commit, their mean and the 95% interval of the mean.
    runs            double precision[] NOT NULL,
    mean            double precision NOT NULL,
    low             double precision,
    high            double precision,
    comparison_id   bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    PRIMARY KEY (tree_id, workload, mode, nr_task, metric, machine_id, measurement, position)
);
