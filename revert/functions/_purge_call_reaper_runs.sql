-- Revert call_timeout_reaper:functions/_purge_call_reaper_runs from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._purge_call_reaper_runs(timestamptz, integer);

COMMIT;
