-- Revert call_timeout_reaper:triggers/call_reaper_settings_guard from pg

BEGIN;

DROP TRIGGER IF EXISTS call_reaper_settings_no_truncate ON messenger.call_reaper_settings;
DROP TRIGGER IF EXISTS call_reaper_settings_guard ON messenger.call_reaper_settings;

COMMIT;
