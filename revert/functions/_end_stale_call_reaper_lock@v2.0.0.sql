-- Revert call_timeout_reaper:functions/_end_stale_call_reaper_lock from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._end_stale_call_reaper_lock();

COMMIT;
