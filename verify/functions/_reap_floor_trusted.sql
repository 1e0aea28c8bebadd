-- Verify call_timeout_reaper:functions/_reap_floor_trusted on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._reap_floor_trusted(messenger.call_reaper_phase_run, record, bigint)'::pg_catalog.regprocedure;

ROLLBACK;
