-- Verify call_timeout_reaper:procedures/run_call_reaper_warden on pg
-- A procedure without SET clause (it COMMITs); its grants: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF NOT coalesce((SELECT p.prokind = 'p' AND p.proconfig IS NULL FROM pg_catalog.pg_proc AS p
                      WHERE p.oid = 'messenger.run_call_reaper_warden()'::pg_catalog.regprocedure), false) THEN
        RAISE EXCEPTION 'run_call_reaper_warden must be a procedure without SET clause (it COMMITs)';
    END IF;
END
$$;

ROLLBACK;
