-- Revert call_timeout_reaper:functions/_check_reaper_duration from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._check_reaper_duration(text, interval, interval, interval);

COMMIT;
