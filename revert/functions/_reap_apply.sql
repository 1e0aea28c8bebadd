-- Revert call_timeout_reaper:functions/_reap_apply from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass);

COMMIT;
