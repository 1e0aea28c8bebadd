-- Verify call_timeout_reaper:functions/resume_call_reaper on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger.resume_call_reaper()'::pg_catalog.regprocedure;

ROLLBACK;
