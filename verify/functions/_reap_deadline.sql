-- Verify call_timeout_reaper:functions/_reap_deadline on pg
-- That it exists (the cast raises otherwise); what it does: tests/pgtap/deadline_closure.sql.

BEGIN;

SELECT 'messenger._reap_deadline(timestamptz)'::pg_catalog.regprocedure;

ROLLBACK;
