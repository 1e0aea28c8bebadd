-- Revert call_timeout_reaper:functions/_reap_deadline from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_deadline(timestamptz);

COMMIT;
