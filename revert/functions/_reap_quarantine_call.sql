-- Revert call_timeout_reaper:functions/_reap_quarantine_call from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_quarantine_call(uuid, text, text, text, uuid, timestamptz, interval, interval);

COMMIT;
