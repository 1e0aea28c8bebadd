-- Revert call_timeout_reaper:functions/_call_reaper_claim_indexes from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._call_reaper_claim_indexes(regclass);

COMMIT;
