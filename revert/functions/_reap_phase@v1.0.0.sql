-- Revert call_timeout_reaper:functions/_reap_phase from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer);

COMMIT;
