-- Verify call_timeout_reaper:functions/_reap_cycle on pg

BEGIN;

SELECT 'messenger._reap_cycle(integer, interval, interval, timestamptz, uuid)'::regprocedure;

ROLLBACK;
