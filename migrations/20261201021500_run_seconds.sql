-- A run's measured and warm-up seconds as typed columns, which reports
-- read instead of casting the stored JSON at every read: one run stored
-- with "seconds": 2147483648 made `(result->>'seconds')::int` fail every
-- report, listing and dashboard that met it. Uploads are bounded now
-- (patchperf-common's `limits`); runs stored before are filled in here
-- with a conversion that cannot fail: anything but a number from 0 to
-- 2147483647 becomes NULL, which a report reads as 0.
ALTER TABLE runs
    ADD COLUMN seconds integer CHECK (seconds >= 0),
    ADD COLUMN warmup_seconds integer CHECK (warmup_seconds >= 0);

CREATE FUNCTION pg_temp.stored_seconds(v jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN
        CASE WHEN v::text::numeric BETWEEN 0 AND 2147483647
             THEN trunc(v::text::numeric)::integer
        END
    END
$$;

UPDATE runs SET
    seconds = pg_temp.stored_seconds(result->'seconds'),
    warmup_seconds = pg_temp.stored_seconds(result->'warmup_seconds');
