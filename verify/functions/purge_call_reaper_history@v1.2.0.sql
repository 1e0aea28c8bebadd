-- Verify call_timeout_reaper:functions/purge_call_reaper_history on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger.purge_call_reaper_history(timestamptz, integer)'::pg_catalog.regprocedure;

ROLLBACK;
