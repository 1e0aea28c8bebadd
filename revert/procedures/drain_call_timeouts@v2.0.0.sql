-- Revert call_timeout_reaper:procedures/drain_call_timeouts from pg

BEGIN;

DROP PROCEDURE IF EXISTS messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint);

COMMIT;
