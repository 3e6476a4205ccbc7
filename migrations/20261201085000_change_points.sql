-- A level shift found in a history (domain::tree, stats::changepoint): the
-- commit after which the metric moved, the size with its interval, and
-- what people said of it. Found again on a later point, it stays one row.
CREATE TABLE change_points (
    id              bigserial PRIMARY KEY,
    tree_id         bigint NOT NULL REFERENCES trees (id) ON DELETE CASCADE,
    machine_id      bigint NOT NULL REFERENCES machines (id),
    measurement     text NOT NULL,
    workload        text NOT NULL,
    mode            text NOT NULL,
    nr_task         integer NOT NULL,
    metric          text NOT NULL,
    -- The first point of the new level, and the last of the old one: the
    -- commits after `from_position` up to `position` hold the change.
    position        integer NOT NULL,
    from_position   integer NOT NULL CHECK (from_position < position),
    commit_sha      text NOT NULL,
    mean_before     double precision NOT NULL,
    mean_after      double precision NOT NULL,
    change_percent  double precision NOT NULL,
    low             double precision,
    high            double precision,
    p               double precision NOT NULL,
    verdict         text NOT NULL CHECK (verdict IN ('regression', 'improvement', 'changed')),
    -- The comparison that measured the commit, and the bisection started
    -- when several commits lie between the levels.
    comparison_id   bigint REFERENCES comparisons (id) ON DELETE SET NULL,
    bisection_id    bigint REFERENCES bisections (id) ON DELETE SET NULL,
    state           text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'acknowledged', 'expected')),
    note            text,
    acknowledged_by bigint REFERENCES tokens (id),
    acknowledged_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tree_id, workload, mode, nr_task, metric, machine_id, measurement, commit_sha)
);

-- The dashboard: open entries, newest first, per tree.
CREATE INDEX change_points_open ON change_points (id DESC) WHERE state = 'open';
CREATE INDEX change_points_tree ON change_points (tree_id, id DESC);
