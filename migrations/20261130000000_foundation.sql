-- patchperf's foundation schema: who may call (tokens), what runs (machines),
-- what is asked (patch series, comparisons), how it is split (jobs, boots),
-- what happened (job_events) and what was measured (runs and the per-run
-- tables under them).
--
-- Enumerations are text with CHECK constraints rather than Postgres enums:
-- adding a value is then one constraint swap in a migration, and the values
-- are exactly the wire spellings of patchperf-common.

-- API tokens. Only the sha256 of a token is kept, so a leaked database does
-- not leak usable credentials; a revoked token stays for the audit trail.
CREATE TABLE tokens (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('runner', 'ci', 'admin')),
    name        text NOT NULL CHECK (name <> ''),
    sha256      text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Runner hosts with the inventory a report header needs. Registration
-- upserts by name; the machine is bound to the token that registered it last,
-- so another runner token cannot act for it.
CREATE TABLE machines (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name <> ''),
    token_id        bigint NOT NULL REFERENCES tokens (id),
    hostname        text NOT NULL,
    cpu_model       text NOT NULL,
    nr_cpu          integer NOT NULL CHECK (nr_cpu > 0),
    memory_bytes    bigint NOT NULL CHECK (memory_bytes >= 0),
    kernel_release  text NOT NULL,
    arch            text NOT NULL,
    kvm_usable      boolean NOT NULL,
    pmu_usable      boolean NOT NULL,
    -- MeasurementMode spellings, best first.
    backends        text[] NOT NULL,
    notes           text[] NOT NULL DEFAULT '{}',
    registered_at   timestamptz NOT NULL DEFAULT now(),
    last_seen       timestamptz NOT NULL DEFAULT now()
);

-- A patch series exactly as submitted. Identical mboxes share one row (by
-- sha256), so resubmitting a series to another base or machine does not
-- duplicate it.
CREATE TABLE patch_series (
    id          bigserial PRIMARY KEY,
    sha256      text NOT NULL UNIQUE,
    mbox        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The messages of a series in mbox order (cover letter included), with the
-- headers a report and an email reply need.
CREATE TABLE patches (
    series_id   bigint NOT NULL REFERENCES patch_series (id) ON DELETE CASCADE,
    position    integer NOT NULL CHECK (position >= 0),
    subject     text NOT NULL,
    message_id  text,
    author      text NOT NULL,
    has_diff    boolean NOT NULL,
    PRIMARY KEY (series_id, position)
);

-- One request to compare base and patched. The parameters that define what
-- is measured are kept as submitted (base and params as the JSON of
-- patchperf-common's BaseSource and WorkloadParams) so the report header can
-- print them verbatim; the columns filtered on are real columns.
CREATE TABLE comparisons (
    id                bigserial PRIMARY KEY,
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    base              jsonb NOT NULL,
    series_id         bigint NOT NULL REFERENCES patch_series (id),
    workloads         text[] NOT NULL CHECK (cardinality(workloads) > 0),
    params            jsonb NOT NULL,
    runs_per_side     integer NOT NULL CHECK (runs_per_side >= 3),
    backend           text,
    config_fragment   text,
    -- Every boot of a comparison runs on one machine: set at submission
    -- when asked for, otherwise by the first claim.
    machine_id        bigint REFERENCES machines (id),
    -- The machine's inventory when it was pinned: the report header must
    -- describe the machine as it was, not as it is now.
    machine_inventory jsonb,
    -- Seed of the random boot order, so the order can be re-derived.
    order_seed        bigint NOT NULL,
    submitted_by      bigint NOT NULL REFERENCES tokens (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);
CREATE INDEX comparisons_status ON comparisons (status, id);
CREATE INDEX comparisons_machine ON comparisons (machine_id, id);

-- A unit of work a runner claims: one block of boots (two: base and patched
-- in random order). Jobs of a comparison are claimed in seq order, each only
-- after the previous one finished, so the boots happen in the recorded order.
CREATE TABLE jobs (
    id                bigserial PRIMARY KEY,
    comparison_id     bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    seq               integer NOT NULL CHECK (seq >= 0),
    state             text NOT NULL DEFAULT 'queued'
                      CHECK (state IN ('queued', 'claimed', 'fetching', 'applying', 'building',
                                       'booting', 'running', 'uploading', 'done', 'failed')),
    -- 0 until first claimed; each claim adds one.
    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts      integer NOT NULL CHECK (max_attempts > 0),
    -- The lease: who holds the job and until when. Kept after the job is
    -- final, to say which machine ran it.
    machine_id        bigint REFERENCES machines (id),
    lease_expires_at  timestamptz,
    message           text NOT NULL DEFAULT '',
    failure_reason    text,
    failure_detail    text,
    log_tail          text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    UNIQUE (comparison_id, seq),
    CHECK ((state = 'failed') = (failure_reason IS NOT NULL))
);
CREATE INDEX jobs_queued ON jobs (comparison_id, seq) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (lease_expires_at)
    WHERE state NOT IN ('queued', 'done', 'failed');

-- The boot order of a comparison: one row per boot, numbered across the
-- whole comparison, each belonging to the job that performs it.
CREATE TABLE boots (
    comparison_id  bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    seq            integer NOT NULL CHECK (seq >= 0),
    job_id         bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    side           text NOT NULL CHECK (side IN ('base', 'patched')),
    PRIMARY KEY (comparison_id, seq)
);
CREATE INDEX boots_job ON boots (job_id, seq);

-- Everything that happened to a job: claims, state changes with the log
-- tail of the step, requeues, the finish.
CREATE TABLE job_events (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    state       text NOT NULL,
    attempt     integer NOT NULL,
    machine_id  bigint REFERENCES machines (id),
    message     text NOT NULL DEFAULT '',
    log_tail    text NOT NULL DEFAULT ''
);
CREATE INDEX job_events_job ON job_events (job_id, id);

-- One run: one workload executed once in one boot. The unique key is what
-- makes uploads idempotent: a retried upload of the same run stores nothing.
CREATE TABLE runs (
    id             bigserial PRIMARY KEY,
    comparison_id  bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    job_id         bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    boot_seq       integer NOT NULL,
    side           text NOT NULL CHECK (side IN ('base', 'patched')),
    workload       text NOT NULL,
    nr_task        integer NOT NULL CHECK (nr_task > 0),
    mode           text NOT NULL CHECK (mode IN ('process', 'thread')),
    measurement    text NOT NULL,
    kernel         jsonb,
    attempt        integer NOT NULL,
    machine_id     bigint NOT NULL REFERENCES machines (id),
    -- The RunResult exactly as uploaded; the tables below are its indexed
    -- projection.
    result         jsonb NOT NULL,
    uploaded_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (comparison_id, boot_seq, workload, nr_task, mode),
    FOREIGN KEY (comparison_id, boot_seq) REFERENCES boots (comparison_id, seq)
);
CREATE INDEX runs_job ON runs (job_id);

-- Scalar metric values, denormalised (comparison, side, workload, nr_task
-- copied from the run) so that a whole report is one index range scan:
-- WHERE comparison_id = $1.
CREATE TABLE metric_values (
    comparison_id  bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    run_id         bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    side           text NOT NULL CHECK (side IN ('base', 'patched')),
    workload       text NOT NULL,
    nr_task        integer NOT NULL,
    name           text NOT NULL,
    value          double precision NOT NULL CHECK (value NOT IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)),
    PRIMARY KEY (run_id, name)
);
CREATE INDEX metric_values_report ON metric_values (comparison_id, workload, nr_task, name, side);

-- Metrics a run could not count: shown as unsupported, never as zero.
CREATE TABLE unsupported_metrics (
    comparison_id  bigint NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    run_id         bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name           text NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE INDEX unsupported_metrics_report ON unsupported_metrics (comparison_id);

-- Per-second series of a run (will-it-scale ops, perf-stat intervals), one
-- array per metric: plots read whole series, never single points.
CREATE TABLE run_series (
    run_id            bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name              text NOT NULL,
    interval_seconds  double precision NOT NULL CHECK (interval_seconds > 0),
    points            double precision[] NOT NULL,
    PRIMARY KEY (run_id, name)
);
