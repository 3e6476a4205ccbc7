-- Automatic calibration (issue 17): a machine about to run an A/B
-- comparison of a kind of run that no A/A comparison on it has measured
-- gets one first. `calibrates` is the comparison that asked for it;
-- `priority` orders claims: 1 for a first calibration (it runs before the
-- A/B comparison it is for), -1 for a calibration whose A/A became too old
-- or was measured before the machine changed (it runs when the machine has
-- nothing else to do), 0 for everything else.
ALTER TABLE comparisons
    ADD COLUMN priority smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN -1 AND 1),
    ADD COLUMN calibrates bigint REFERENCES comparisons (id) ON DELETE SET NULL,
    ADD CONSTRAINT comparisons_calibrates_aa CHECK (calibrates IS NULL OR kind = 'aa');
