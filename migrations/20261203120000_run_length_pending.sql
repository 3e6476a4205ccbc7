-- A comparison whose submission left its run length (seconds, warm-up) to
-- the measurement mode, while no mode is known: neither named nor implied
-- by a named machine. `comparisons.params` holds a wall-clock mode's
-- length meanwhile (what the release before measures, should it claim
-- it); the first claim fixes the length from the claiming machine's mode
-- and deletes the row. `asked` is the parameters as submitted. A table of
-- its own for the reason `comparison_headlines` gives.
CREATE TABLE run_length_pending (
    comparison_id bigint PRIMARY KEY REFERENCES comparisons (id) ON DELETE CASCADE,
    asked jsonb NOT NULL
);
