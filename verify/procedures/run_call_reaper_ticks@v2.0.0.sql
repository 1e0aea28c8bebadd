-- Verify call_timeout_reaper:procedures/run_call_reaper_ticks on pg
-- A procedure without SET clause (it COMMITs); its grants: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF NOT coalesce((SELECT p.prokind = 'p' AND p.proconfig IS NULL FROM pg_catalog.pg_proc AS p
                      WHERE p.oid = 'messenger.run_call_reaper_ticks(timestamptz)'::pg_catalog.regprocedure), false) THEN
        RAISE EXCEPTION 'run_call_reaper_ticks must be a procedure without SET clause (it COMMITs)';
    END IF;
END
$$;

ROLLBACK;
