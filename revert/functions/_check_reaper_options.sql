-- Revert call_timeout_reaper:functions/_check_reaper_options from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._check_reaper_options(integer, interval, interval, timestamptz);

COMMIT;
