-- Revert call_timeout_reaper:functions/_reap_save_floor from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_save_floor(text, timestamptz, uuid, timestamptz, uuid, boolean, boolean, timestamptz, boolean, bigint, bigint, uuid, timestamptz);

COMMIT;
