-- Verify call_timeout_reaper:functions/_end_stale_call_reaper_lock on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._end_stale_call_reaper_lock()'::pg_catalog.regprocedure;

ROLLBACK;
