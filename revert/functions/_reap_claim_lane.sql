-- Revert call_timeout_reaper:functions/_reap_claim_lane from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_claim_lane(text, timestamptz, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, integer, regclass);

COMMIT;
