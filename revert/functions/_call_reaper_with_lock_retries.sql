-- Revert call_timeout_reaper:functions/_call_reaper_with_lock_retries from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._call_reaper_with_lock_retries(text);

COMMIT;
