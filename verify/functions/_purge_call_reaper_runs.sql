-- Verify call_timeout_reaper:functions/_purge_call_reaper_runs on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._purge_call_reaper_runs(timestamptz, integer)'::pg_catalog.regprocedure;

ROLLBACK;
