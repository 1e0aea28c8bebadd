-- Verify call_timeout_reaper:functions/_reap_ledger on pg
-- That it exists (the cast raises otherwise); what it writes: tests/pgtap/run_ledger.sql,
-- ledger_fold_cost.sql, empty_cycle.sql.

BEGIN;

SELECT 'messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings, double precision[], integer, integer, text, text)'::pg_catalog.regprocedure;

ROLLBACK;
