-- Revert call_timeout_reaper:functions/reap_call_timeouts from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.reap_call_timeouts(integer, interval, interval, timestamptz);

COMMIT;
