-- Revert call_timeout_reaper:procedures/_reap_local_pairs from pg

BEGIN;

DROP PROCEDURE IF EXISTS messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb);

COMMIT;
