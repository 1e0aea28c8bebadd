-- Verify call_timeout_reaper:functions/_reap_close on pg

BEGIN;

SELECT 'messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer)'::regprocedure;

ROLLBACK;
