-- Verify call_timeout_reaper:functions/_reap_claim on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._reap_claim(messenger.call_reaper_phase_run, messenger.call_reaper_lanes)'::pg_catalog.regprocedure;

ROLLBACK;
