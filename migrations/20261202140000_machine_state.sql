-- A runner fleet an admin steers (issue 28, item 3): each machine's admin
-- state (active, draining, paused, retired; only an active one claims),
-- the admin's note and when it changed, and the protocol version its runner
-- registered with. A table of its own beside `machines`, not columns on
-- it: the release before reads `SELECT * FROM machines` through prepared
-- statements, which Postgres refuses once the table's columns change
-- ("cached plan must not change result type"), so adding columns there
-- would break a server still running during a rolling upgrade. A machine
-- without a row here is active, registered with version 1. (An older
-- server does not know states: until the last one is replaced, a held
-- machine can still claim through it.)
CREATE TABLE machine_fleet (
    machine_id bigint PRIMARY KEY REFERENCES machines (id) ON DELETE CASCADE,
    state text NOT NULL DEFAULT 'active'
        CONSTRAINT machine_fleet_state_known
        CHECK (state IN ('active', 'draining', 'paused', 'retired')),
    state_note text NOT NULL DEFAULT '',
    state_changed_at timestamptz,
    protocol_version integer NOT NULL DEFAULT 1
);
