-- Revert call_timeout_reaper:functions/preview_call_timeouts from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.preview_call_timeouts(integer, interval, interval, timestamptz);

COMMIT;
