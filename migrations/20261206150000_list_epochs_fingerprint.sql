-- The archive manifest's fingerprint of an epoch when it was last read to
-- its head: a round that finds the same fingerprint in the manifest
-- neither fetches nor reads the epoch.
ALTER TABLE list_epochs ADD COLUMN fingerprint text;
