-- Revert call_timeout_reaper:functions/_call_reaper_settings_guard from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._call_reaper_settings_guard();

COMMIT;
