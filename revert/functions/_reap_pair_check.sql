-- Revert call_timeout_reaper:functions/_reap_pair_check from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_pair_check(regclass, regclass, uuid, timestamptz, jsonb, integer);

COMMIT;
