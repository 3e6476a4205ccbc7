-- Mailing lists followed (issue 25): the list, where its public-inbox
-- archive was read up to, every message kept raw, and each series version
-- assembled from them with where it stands. A series' comparison queues
-- behind submissions and calibrations: priority -2.

CREATE TABLE lists (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    address text NOT NULL,
    archive_url text,
    read_history boolean NOT NULL DEFAULT false,
    tree_id bigint REFERENCES trees (id) ON DELETE RESTRICT,
    base_url text,
    base_branch text,
    paths text[] NOT NULL,
    workload_map jsonb NOT NULL,
    workloads text[] NOT NULL,
    params jsonb NOT NULL,
    runs_per_side integer NOT NULL,
    backend text,
    machine_name text,
    cc_list boolean NOT NULL,
    cc_thread boolean NOT NULL,
    report_improvements boolean NOT NULL,
    wait_minutes integer NOT NULL,
    poll_minutes integer NOT NULL,
    max_in_flight integer NOT NULL,
    daily_cap integer NOT NULL,
    created_by bigint NOT NULL REFERENCES tokens (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    polled_at timestamptz,
    poll_error text,
    CHECK ((tree_id IS NULL) <> (base_url IS NULL AND base_branch IS NULL))
);

-- A public-inbox v2 archive is one git repository per epoch; v1 is epoch 0
-- at the archive's own URL.
CREATE TABLE list_epochs (
    list_id bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    epoch integer NOT NULL CHECK (epoch >= 0),
    url text NOT NULL,
    last_commit text,
    PRIMARY KEY (list_id, epoch)
);

CREATE TABLE list_messages (
    id bigserial PRIMARY KEY,
    list_id bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    message_id text NOT NULL,
    thread_root text NOT NULL,
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    -- New in its thread since the thread was last assembled.
    pending boolean NOT NULL DEFAULT true,
    UNIQUE (list_id, message_id)
);
CREATE INDEX list_messages_thread ON list_messages (list_id, thread_root);
CREATE INDEX list_messages_pending ON list_messages (list_id) WHERE pending;

CREATE TABLE list_series (
    id bigserial PRIMARY KEY,
    list_id bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
    thread_root text NOT NULL,
    -- The cover letter's Message-ID, or the first patch's: what a reply
    -- answers, and what names this version.
    anchor text NOT NULL,
    series_key text NOT NULL,
    version integer NOT NULL,
    total integer NOT NULL,
    subject text NOT NULL,
    title text NOT NULL,
    author text NOT NULL,
    posted_at timestamptz,
    state text NOT NULL CHECK (state IN ('waiting', 'incomplete', 'skipped', 'superseded',
                                         'queued', 'measured', 'reported', 'failed')),
    reason text,
    missing integer[] NOT NULL DEFAULT '{}',
    comparison_id bigint REFERENCES comparisons (id) ON DELETE SET NULL,
    previous_id bigint REFERENCES list_series (id) ON DELETE SET NULL,
    reply_message_id text,
    seen_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (list_id, anchor)
);
CREATE INDEX list_series_key ON list_series (list_id, series_key, version);
CREATE INDEX list_series_open ON list_series (list_id) WHERE state IN ('waiting', 'queued');
CREATE INDEX list_series_comparison ON list_series (comparison_id);

ALTER TABLE comparisons DROP CONSTRAINT comparisons_priority_check;
ALTER TABLE comparisons ADD CONSTRAINT comparisons_priority_check CHECK (priority BETWEEN -2 AND 1);

-- A reply answers a message of the thread.
ALTER TABLE outbox
    ADD COLUMN in_reply_to text,
    ADD COLUMN refs text;
