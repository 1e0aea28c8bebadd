-- Verify call_timeout_reaper:functions/pause_call_reaper on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger.pause_call_reaper()'::pg_catalog.regprocedure;

ROLLBACK;
