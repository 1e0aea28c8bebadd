-- Revert call_timeout_reaper:functions/call_reaper_lock_holder from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_lock_holder();

COMMIT;
