-- Verify call_timeout_reaper:functions/_reap_claim_lane on pg

BEGIN;

SELECT 'messenger._reap_claim_lane(messenger.call_reaper_lanes, timestamptz, uuid, timestamptz, uuid, uuid[], integer, regclass)'::regprocedure;

ROLLBACK;
