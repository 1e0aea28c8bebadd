-- Revert call_timeout_reaper:functions/call_reaper_phases from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_phases();

COMMIT;
