-- Verify call_timeout_reaper:functions/_reap_phase on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._reap_phase(messenger.call_reaper_phase_run)'::pg_catalog.regprocedure;

ROLLBACK;
