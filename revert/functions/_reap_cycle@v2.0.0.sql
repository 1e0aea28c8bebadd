-- Revert call_timeout_reaper:functions/_reap_cycle from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_cycle(integer, interval, interval, timestamptz, uuid);

COMMIT;
