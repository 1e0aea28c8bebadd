-- Revert call_timeout_reaper:functions/_reap_close from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_close(text, uuid, timestamptz, interval, uuid[], timestamptz[], timestamptz[], integer, integer, integer, interval, interval);

COMMIT;
