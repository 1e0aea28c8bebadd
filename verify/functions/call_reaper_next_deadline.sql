-- Verify call_timeout_reaper:functions/call_reaper_next_deadline on pg
-- That it exists (the cast raises otherwise); what it returns: tests/pgtap/next_deadline.sql.

BEGIN;

SELECT 'messenger.call_reaper_next_deadline(timestamptz)'::pg_catalog.regprocedure;

ROLLBACK;
