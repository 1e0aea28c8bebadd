-- Verify call_timeout_reaper:functions/_reap_claim_lane on pg

BEGIN;

SELECT 'messenger._reap_claim_lane(text, timestamptz, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, integer, regclass)'::regprocedure;

ROLLBACK;
