-- Revert call_timeout_reaper:functions/_preview_local_pairs from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._preview_local_pairs(timestamptz, jsonb);

COMMIT;
