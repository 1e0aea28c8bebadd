-- Verify call_timeout_reaper:functions/_reap_local_gone on pg
-- That it exists (the cast raises otherwise); what it does on a Citus worker: tests/citus/test_citus.py.

BEGIN;

SELECT 'messenger._reap_local_gone(uuid, timestamptz, jsonb)'::pg_catalog.regprocedure;

ROLLBACK;
