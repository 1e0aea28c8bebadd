-- Revert call_timeout_reaper:functions/_reap_pair from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid);

COMMIT;
