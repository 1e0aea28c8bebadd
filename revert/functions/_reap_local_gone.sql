-- Revert call_timeout_reaper:functions/_reap_local_gone from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_local_gone(uuid, timestamptz, jsonb);

COMMIT;
