-- Verify call_timeout_reaper:functions/_reap_local_pin on pg
-- That it exists (the cast raises otherwise); what it does on a Citus worker: tests/citus/test_citus.py.

BEGIN;

SELECT 'messenger._reap_local_pin(regclass, bigint, bigint, text, boolean)'::pg_catalog.regprocedure;

ROLLBACK;
