-- Revert call_timeout_reaper:functions/purge_call_reaper_history from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.purge_call_reaper_history(timestamptz, integer);

COMMIT;
