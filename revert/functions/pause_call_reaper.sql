-- Revert call_timeout_reaper:functions/pause_call_reaper from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.pause_call_reaper();

COMMIT;
