-- How a comparison, a tracked tree or a bisection is measured, kept as one
-- value (issue 44, item 2): `setup` is `patchperf_common::api::Setup` in
-- its JSON form, as asked, so that a new setting is a field of that type
-- and not a column in three tables. `params` and `runs_per_side` stay
-- columns because they are state: the run length is fixed when a machine
-- claims, boots are added while undecided (the setup's are as asked), and
-- `machine_id` stays the reference to the machine.
--
-- Expand, then contract (README, "Upgrading"). This release writes and
-- reads `setup` only. The columns it replaces (workloads, backend,
-- config_fragment, max_runs_per_side, pool; a bisection's workload) are
-- still read by the release before, so a trigger fills them from `setup`
-- on every insert of this release, and fills `setup` from them on an
-- insert of the release before (which leaves `setup` out). Neither release
-- updates these values after the insert. The release after this one drops
-- the columns and the triggers.

ALTER TABLE comparisons ADD COLUMN setup jsonb;
ALTER TABLE trees ADD COLUMN setup jsonb;
ALTER TABLE bisections ADD COLUMN setup jsonb;

-- The setup the columns spell, with what they leave out (a machine is a
-- reference, kept in `machine_id`) absent.
CREATE FUNCTION setup_from_columns(workloads text[], params jsonb, runs integer,
                                   max_runs integer, backend text,
                                   config_fragment text, pool text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('workloads', to_jsonb(workloads), 'params', params, 'runs', runs)
           || jsonb_strip_nulls(jsonb_build_object('max_runs', max_runs, 'backend', backend,
                                                   'config_fragment', config_fragment,
                                                   'pool', pool))
$$;

-- A setup's workloads as an array, for the queries that filter on them.
CREATE FUNCTION setup_workloads(setup jsonb) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY(SELECT jsonb_array_elements_text(setup -> 'workloads'))
$$;

UPDATE comparisons
SET setup = setup_from_columns(workloads, params, runs_per_side, max_runs_per_side, backend,
                               config_fragment, pool);
UPDATE trees
SET setup = setup_from_columns(workloads, params, runs_per_side, max_runs_per_side, backend,
                               config_fragment, pool);
UPDATE bisections
SET setup = setup_from_columns(ARRAY[workload], params, runs_per_side, max_runs_per_side,
                               backend, config_fragment, NULL);

-- For comparisons and tracked trees, whose columns have the same names.
CREATE FUNCTION setup_in_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.setup IS NULL THEN
        NEW.setup := setup_from_columns(NEW.workloads, NEW.params, NEW.runs_per_side,
                                        NEW.max_runs_per_side, NEW.backend,
                                        NEW.config_fragment, NEW.pool);
    ELSE
        NEW.workloads := setup_workloads(NEW.setup);
        NEW.max_runs_per_side := (NEW.setup ->> 'max_runs')::integer;
        NEW.backend := NEW.setup ->> 'backend';
        NEW.config_fragment := NEW.setup ->> 'config_fragment';
        NEW.pool := NEW.setup ->> 'pool';
    END IF;
    RETURN NEW;
END
$$;

-- A bisection follows one workload, and its most runs are always set.
CREATE FUNCTION bisections_setup_in_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.setup IS NULL THEN
        NEW.setup := setup_from_columns(ARRAY[NEW.workload], NEW.params, NEW.runs_per_side,
                                        NEW.max_runs_per_side, NEW.backend,
                                        NEW.config_fragment, NULL);
    ELSE
        NEW.workload := NEW.setup -> 'workloads' ->> 0;
        NEW.max_runs_per_side := COALESCE((NEW.setup ->> 'max_runs')::integer,
                                          NEW.runs_per_side);
        NEW.backend := NEW.setup ->> 'backend';
        NEW.config_fragment := NEW.setup ->> 'config_fragment';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER setup_in_step BEFORE INSERT ON comparisons
    FOR EACH ROW EXECUTE FUNCTION setup_in_step();
CREATE TRIGGER setup_in_step BEFORE INSERT ON trees
    FOR EACH ROW EXECUTE FUNCTION setup_in_step();
CREATE TRIGGER setup_in_step BEFORE INSERT ON bisections
    FOR EACH ROW EXECUTE FUNCTION bisections_setup_in_step();
