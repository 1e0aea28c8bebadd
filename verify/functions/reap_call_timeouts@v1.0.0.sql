-- Verify call_timeout_reaper:functions/reap_call_timeouts on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger.reap_call_timeouts(integer, interval, interval, timestamptz)'::pg_catalog.regprocedure;

ROLLBACK;
