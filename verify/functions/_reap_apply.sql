-- Verify call_timeout_reaper:functions/_reap_apply on pg
-- That it exists (the cast raises otherwise); its grants: tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass)'::pg_catalog.regprocedure;

ROLLBACK;
