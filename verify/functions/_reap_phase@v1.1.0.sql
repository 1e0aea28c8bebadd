-- Verify call_timeout_reaper:functions/_reap_phase on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer, uuid)'::pg_catalog.regprocedure;

ROLLBACK;
