-- Revert call_timeout_reaper:functions/call_reaper_metrics from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_metrics();

COMMIT;
