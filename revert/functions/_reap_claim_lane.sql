-- Revert call_timeout_reaper:functions/_reap_claim_lane from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_claim_lane(messenger.call_reaper_lanes, timestamptz, uuid, timestamptz, uuid, uuid[], integer, regclass);

COMMIT;
