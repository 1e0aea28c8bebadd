-- Revert call_timeout_reaper:triggers/call_reaper_settings_polling from pg

BEGIN;

DROP TRIGGER IF EXISTS call_reaper_settings_polling_guard ON messenger.call_reaper_settings;
DROP FUNCTION IF EXISTS messenger._call_reaper_polling_guard();

COMMIT;
