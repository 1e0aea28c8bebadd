-- Verify call_timeout_reaper:functions/_reap_quarantine_call on pg

BEGIN;

SELECT 'messenger._reap_quarantine_call(uuid, text, text, text, uuid, timestamptz, interval, interval)'::regprocedure;

ROLLBACK;
