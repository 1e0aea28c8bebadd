-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg

BEGIN;

REVOKE SELECT (polling_interval, paused, batch_size) ON messenger.call_reaper_settings FROM messenger_call_reaper;
DROP PROCEDURE IF EXISTS messenger.run_call_reaper_ticks(timestamptz);

COMMIT;
