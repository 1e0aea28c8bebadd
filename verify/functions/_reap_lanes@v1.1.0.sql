-- Verify call_timeout_reaper:functions/_reap_lanes on pg

BEGIN;

SELECT 'messenger._reap_lanes(text, timestamptz, interval, interval, interval, uuid)'::regprocedure;

ROLLBACK;
