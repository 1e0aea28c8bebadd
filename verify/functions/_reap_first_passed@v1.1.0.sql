-- Verify call_timeout_reaper:functions/_reap_first_passed on pg

BEGIN;

SELECT 'messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean)'::regprocedure;

ROLLBACK;
