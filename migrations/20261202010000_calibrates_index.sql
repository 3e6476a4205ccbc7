-- Every claim on an auto-calibrating server asks whether a comparison
-- already has its calibration A/A (`calibrates = $1`), and deleting a
-- comparison clears the column in the A/As that calibrated it: without an
-- index both read the whole table. Few rows calibrate, so the index is
-- partial.
CREATE INDEX comparisons_calibrates ON comparisons (calibrates) WHERE calibrates IS NOT NULL;
