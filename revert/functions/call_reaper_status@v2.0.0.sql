-- Revert call_timeout_reaper:functions/call_reaper_status from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_status();

COMMIT;
