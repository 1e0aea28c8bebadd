-- Revert call_timeout_reaper:procedures/run_call_reaper_warden from pg

BEGIN;

DROP PROCEDURE IF EXISTS messenger.run_call_reaper_warden();

COMMIT;
