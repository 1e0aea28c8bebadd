-- Revert call_timeout_reaper:functions/_reap_first_passed from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass);

COMMIT;
