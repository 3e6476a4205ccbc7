-- A runner fleet an admin steers (issue 28, item 3): each machine's admin
-- state (active, draining, paused, retired; only an active one claims),
-- the admin's note and when it changed, and the protocol version its runner
-- registered with. Expand only: every column has a default, so a server
-- from before this migration goes on reading and registering machines (it
-- names its columns or reads them by position) and sees every machine as
-- it did.
ALTER TABLE machines
    ADD COLUMN state text NOT NULL DEFAULT 'active'
        CONSTRAINT machines_state_known
        CHECK (state IN ('active', 'draining', 'paused', 'retired')),
    ADD COLUMN state_note text NOT NULL DEFAULT '',
    ADD COLUMN state_changed_at timestamptz,
    ADD COLUMN protocol_version integer NOT NULL DEFAULT 1;
