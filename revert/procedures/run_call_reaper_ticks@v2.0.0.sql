-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg
-- The column grants the deploy gave the job role (and the operator) go with the procedure that
-- needed them.

BEGIN;

REVOKE SELECT (kind, schedule) ON messenger.call_reaper_cron_jobs FROM messenger_call_reaper, messenger_call_reaper_operator;
REVOKE SELECT (polling_interval, paused, batch_size) ON messenger.call_reaper_settings FROM messenger_call_reaper;
DROP PROCEDURE IF EXISTS messenger.run_call_reaper_ticks(timestamptz);

COMMIT;
