-- Verify call_timeout_reaper:functions/_reap_close on pg

BEGIN;

SELECT 'messenger._reap_close(text, uuid, timestamptz, interval, uuid[], timestamptz[], timestamptz[], integer, integer, integer, interval, interval)'::regprocedure;

ROLLBACK;
