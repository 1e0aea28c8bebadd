-- Revert call_timeout_reaper:functions/_reap_close from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer);

COMMIT;
