-- Revert call_timeout_reaper:functions/_reap_fanout from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_fanout(uuid, timestamptz, jsonb, integer);

COMMIT;
